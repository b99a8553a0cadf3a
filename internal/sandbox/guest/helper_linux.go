package guest

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/verisim/verisim/internal/fstree"
	"github.com/verisim/verisim/internal/sandbox/layer"
)

// Helper modes: EnvMarker set to one of these starts the init binary not
// as an init but as a helper for a rootless runtime, which the host starts
// in a user namespace of its own (never a sandbox's) mapping the same ids
// as its sandboxes', with ambient capabilities to override file
// permissions there: it may read, chown and delete the files of every id a
// sandbox maps, which the host user may not. The host closes FDConfig once
// the helper's id maps are written.
const (
	// MarkerRemove removes the directory trees named by the arguments:
	// layers holding files of other ids.
	MarkerRemove = "remove"
	// MarkerCopy applies the layers open at descriptors 5, 6, … (as many
	// as its first argument says) in order onto the directory open at
	// descriptor 4: a rootless sandbox's snapshot, its writable layer
	// last, squashing the snapshot layers before it when asked. Its second
	// argument bounds the bytes of file data taken from the last layer
	// (layer.ApplyWithin; 0: none).
	MarkerCopy = "copy"
)

// helperMain is a helper's whole life.
func helperMain(mode string) {
	os.Clearenv()
	// EOF once the maps are written: before, every file is unmapped and
	// out of reach.
	_, _ = io.Copy(io.Discard, os.NewFile(FDConfig, "maps"))
	var errs []error
	switch mode {
	case MarkerRemove:
		for _, p := range os.Args[1:] {
			if err := fstree.RemoveAll(p); err != nil {
				errs = append(errs, err)
			}
		}
	case MarkerCopy:
		var n int
		var limit int64
		if len(os.Args) == 3 {
			n, _ = strconv.Atoi(os.Args[1])
			limit, _ = strconv.ParseInt(os.Args[2], 10, 64)
		}
		if n <= 0 || limit < 0 {
			errs = append(errs, fmt.Errorf("copy helper: want the number of layers and the last one's byte limit as arguments, got %q", os.Args[1:]))
		}
		for fd := 5; fd < 5+n && len(errs) == 0; fd++ {
			var max int64
			if fd == 5+n-1 {
				max = limit
			}
			if err := layer.ApplyWithin(context.Background(), fd, 4, max); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, err := range errs {
		fmt.Fprintln(os.Stderr, err)
	}
	if len(errs) > 0 {
		os.Exit(1)
	}
	os.Exit(0)
}

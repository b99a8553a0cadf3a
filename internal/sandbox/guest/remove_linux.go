package guest

import (
	"fmt"
	"io"
	"os"

	"github.com/verisim/verisim/internal/fstree"
)

// MarkerRemove, as EnvMarker's value, starts the init binary as a helper
// that removes the directory trees named by its arguments: layers a
// rootless runtime's sandboxes wrote, holding files of other ids of the
// sandbox's user namespace, which the host user may not delete. The host
// starts it in a user namespace of its own with the same id maps and
// ambient capabilities to override file permissions there, and closes
// FDConfig once newuidmap and newgidmap have written the maps.
const MarkerRemove = "remove"

// removeMain is the helper's whole life.
func removeMain() {
	os.Clearenv()
	// EOF once the maps are written: before, every file is unmapped and
	// out of reach.
	_, _ = io.Copy(io.Discard, os.NewFile(FDConfig, "maps"))
	code := 0
	for _, p := range os.Args[1:] {
		if err := fstree.RemoveAll(p); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// Command verisim-init is the init (PID 1) of a sandbox on the local
// backend. It is the code verisim runs when it re-executes itself as a
// sandbox's init (package guest), in a small statically linked binary that
// starts in a fraction of the time: verisim uses it for every sandbox when
// it is installed next to the verisim binary and was built from the same
// source (checked with --protocol). It is not meant to be run by hand.
package main

import (
	"fmt"
	"os"

	"github.com/verisim/verisim/internal/sandbox/guest"
)

func main() {
	if guest.IsInit() {
		guest.Main()
	}
	if len(os.Args) == 2 && os.Args[1] == "--protocol" {
		fmt.Printf("verisim-init protocol %d\n", guest.Protocol)
		return
	}
	fmt.Fprintln(os.Stderr, "verisim-init is started by verisim as a sandbox's init, not by hand; run verisim instead")
	os.Exit(2)
}

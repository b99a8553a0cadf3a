// Package local is the default sandbox backend on Linux: each sandbox is a
// set of fresh namespaces (mount, PID, UTS, IPC, network, cgroup) whose root
// filesystem is an overlay of read-only image layers under a writable tmpfs
// layer, limited by cgroups nested under verisim's own.
//
// The host side (this package) prepares a run directory and cgroups and
// starts the guest init (package guest) by re-executing the current binary;
// binaries that use this package must call guest.IsInit/guest.Main first
// thing in main and in TestMain. All requests then go to the init over a
// unix socket in the run directory, speaking package wire.
//
// Mounts exist only inside each sandbox's mount namespace, so they vanish
// with its processes; what a crash can leave behind (cgroups, the run
// directory, an init whose creator died with Keep set) is found by GC.
//
// As root it limits sandboxes with cgroups and freezes them for snapshots.
// Without root each sandbox also gets a user namespace and no cgroups (only
// the disk limit); its init pauses it for a snapshot while a helper in a
// user namespace of its own, with the same id maps, copies the writable
// layer, and such helpers remove layers holding other ids' files
// (docs/ARCHITECTURE.md). Runtime and Sandbox are safe for concurrent use.
package local

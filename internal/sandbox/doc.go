// Package sandbox defines the isolated machines verisim runs agents in.
//
// A Runtime creates Sandboxes from a Spec and forks them from snapshots; a
// Sandbox runs commands, reads and writes files, snapshots its filesystem and
// closes. Backends live in sub-packages (local, process) and must pass the
// conformance suite in sandboxtest.
//
// Spec is mechanism only: image layers, binds, user, limits. Packages image
// and persona turn a user's choices into a Spec.
//
// All methods of Runtime and Sandbox are safe for concurrent use. Close is
// idempotent and leaves nothing behind: no process, mount, cgroup or
// directory.
package sandbox

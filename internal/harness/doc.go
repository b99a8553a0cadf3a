// Package harness holds what an agent acts with: the Workspace its tool calls
// run in and the Tools it may call. The same tools serve training, where the
// Workspace is a sandbox (SandboxWorkspace), and production, where it is the
// user's own checkout (DirWorkspace); tools talk to nothing but a Workspace,
// so there is one code path for both.
//
// A tool call ends in one of two ways. A mistake of the model (a missing
// file, an ambiguous edit, arguments that are not JSON) is a Result whose
// Error the model reads as its observation; the episode goes on. A Go error
// means the infrastructure failed (the sandbox died, the context was
// cancelled) and the step must not be scored.
//
// Tools are stateless and safe for concurrent use; CallAll runs the calls of
// one assistant message concurrently. A Registry is filled once and then is
// safe for concurrent reads; Register must not race with Lookup or Specs.
// Workspaces are safe for concurrent use, but concurrent writes to one file
// are not ordered.
//
// DirWorkspace refuses paths that resolve outside its root, symlinks
// included. That guards against mistakes, not against an adversary: a
// command run with run_terminal_cmd can reach anything its user can.
package harness

// Package generate makes tasks from real Go code: it takes a Go module whose
// tests pass offline, changes a copy of it the way a developer's mistake or
// an unfinished change would (a feature deleted, a bug injected), proves
// with the module's own tests that the change is detectable and that the
// original code fixes it, and writes the result as a task directory
// (docs/task-format.md).
//
// The input module is only read; all work happens on a scratch copy that
// is removed afterwards. Candidates are chosen deterministically from
// Options.Seed, so the same module, seed and output directory give the same
// tasks. Each task directory appears whole or not at all (it is written
// under a temporary name and renamed into place), and a task that already
// exists in the output directory is never overwritten: running a generator
// again adds only tasks it has not made before. Generators shell out to the
// host's go command with the network off (GOPROXY=off), so the module's
// dependencies must already be in the module cache.
package generate

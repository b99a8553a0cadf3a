// Package task reads, checks and prepares tasks: a repository at a known
// state, what a developer asks about it, hidden tests and a reference
// solution. docs/task-format.md specifies the directory layout and task.yaml.
//
// Load and LoadSuite report every problem of a file at once, each naming the
// file, line and field. Materialize turns a task's repository source into a
// git checkout on the host, scrubbed of artefacts that could leak code (see
// Scrub), ready for the machine builder to clone into a persona's workspace;
// results are cached by content and safe to share between processes.
//
// The subpackages importer and generate write task directories in this
// format from other sources.
package task

// Package importer turns tasks published in other formats into verisim task
// directories (docs/task-format.md): SWE-bench-style JSONL records against a
// local clone of their repository, and Harbor / Terminal-Bench task
// directories.
//
// An import is all or nothing: every task is written into a temporary
// directory inside the output directory and moved into place only once all
// of them are complete, so a failed import leaves the output directory as it
// found it. Inputs (records, clones, task directories) are only read. The
// functions are safe to call concurrently for different output directories.
package importer

// The bundled task suite (see docs/task-format.md). Its own module, so that
// the Go sources of task repositories, hidden tests and solutions stay out of
// the verisim module's build, vet and tests.
module github.com/verisim/verisim/tasks

go 1.22

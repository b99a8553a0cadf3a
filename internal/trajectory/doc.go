// Package trajectory is verisim's training-data record: one Trajectory per
// episode, with the exact token ids the model saw and produced, the sampled
// tokens' logprobs, the weights version behind every completion, the chat
// messages, tool calls and observations, the status, the reward and its
// parts, monitor flags, timings, and sandbox and model details. Nothing is
// re-tokenised for training: the ids recorded here are the ids trained on.
//
// Trajectories are stored as JSON Lines, one record per line, specified
// byte for byte in docs/trajectory-format.md. Version is the schema version;
// fields are only ever added within a version.
//
// # Promises
//
//   - Only valid records are written or read: Writer.Write and Reader.Next
//     both apply Trajectory.Validate.
//   - Status decides what trains: only StatusOK carries its reward into
//     training (Status.Trainable). An infrastructure failure is never a
//     reward of 0.
//   - Lines are whole. A Writer is safe for concurrent use and hands each
//     record, newline included, to the underlying io.Writer in one Write
//     call, so Writers in many goroutines or processes appending to one
//     O_APPEND file (OpenFile) never interleave records.
//   - A crash mid-write costs only the record being written: Reader reports
//     it as ErrTruncated and goes on, ReadFile returns the good records with
//     ErrTruncated, OpenFile ends the cut line before appending, and
//     Finished lists the episodes already recorded so a run can resume.
//   - A reader never guesses at a newer format: a record whose version is
//     above Version is refused with ErrUnsupportedVersion.
//   - Times are written in UTC and read back in UTC, so a record read,
//     written and read again is equal to itself.
//
// A Reader is for one goroutine.
package trajectory

// Package reward grades ended episodes and labels them with evidence of
// reward hacking.
//
// A Grader holds one task's hidden tests and the original content of its
// protected files. Grader.Run, in the machine the episode ran in, puts
// protected files back as the repository had them (recording each
// difference as a Change), copies the hidden tests in, runs the grade
// command, and reads its output in the task's format into a Result. Run
// returns an error only when the machine fails; a failing, crashing or
// hanging grade command is a Result that does not pass, so that
// infrastructure failures are never confused with a zero reward.
//
// Monitors read a trajectory's tool calls, and the grade, for behaviour
// that games the reward: changing tests (test_tampering), looking for the
// grader (grader_probe), mining git history or build artefacts for the
// answer (history_mining, artifact_mining), reaching the network
// (network_attempt), and probing for a sandbox (environment_probing).
// Label appends their flags to the trajectory, never twice for one name
// in one turn. Each monitor's doc comment says what it deliberately does
// not flag; the aim is no false alarm on ordinary development.
//
// Score turns a grade and flags into the trajectory's reward and its
// parts, under a Shaping.
//
// A Grader is immutable once made and safe for concurrent use; monitors
// hold no state and are safe for concurrent use on different episodes.
// Label and Score change the trajectory they are given and nothing else.
package reward

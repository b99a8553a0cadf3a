// Package guest is the init that runs as PID 1 inside a sandbox.
//
// The host starts it in fresh namespaces with a few inherited descriptors
// (see Main). It builds the sandbox's root filesystem, pivots into it, and
// then serves wire requests: commands with streamed output, file reads and
// writes. As PID 1 it reaps every orphan, and when it exits the kernel kills
// everything left in the sandbox, so no process outlives it.
//
// The same server runs unchanged where the machine boots differently (a
// microVM's init, a pod's entrypoint); only Setup is specific to the local
// namespace backend.
package guest

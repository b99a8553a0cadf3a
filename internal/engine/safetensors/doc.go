// Package safetensors reads and writes model weights in the Hugging Face
// safetensors format, as single files and as sharded checkpoint directories.
//
// A file is an 8-byte little-endian header length N, N bytes of JSON header
// (padded with spaces to a multiple of 8), then the raw little-endian data
// buffer. The header maps each tensor name to its dtype, shape and
// [begin, end) byte range within the data buffer, plus an optional
// "__metadata__" object of string pairs.
//
// What the package promises:
//
//   - Reading is strict and never panics on hostile input. Read and
//     ReadHeader reject a header longer than MaxHeaderSize or than the file,
//     JSON that does not parse or is not valid UTF-8, unknown dtypes,
//     duplicate names, ranges that disagree with shape × dtype size, and
//     ranges that overlap, leave gaps or fail to cover the data buffer
//     exactly. Every such error is a *FormatError naming the file and, where
//     there is one, the tensor; errors.Is(err, ErrFormat) reports them.
//   - Writing is deterministic and matches the reference implementation
//     byte for byte: tensors are laid out the way huggingface/safetensors
//     lays them out (by dtype, widest alignment first, then by name, which
//     keeps every tensor aligned to its element size), metadata keys are
//     sorted, and the same input always gives the same bytes.
//   - Writing is atomic and durable: data goes to a temporary file in the
//     target directory, is fsynced, and is renamed into place; the directory
//     is fsynced after the rename. A crash leaves the old file or the new
//     one, never a torn one. WriteSharded extends this to a checkpoint
//     directory, with the index file as the commit point (see WriteSharded).
//   - Tensors returned by Read and ReadDir share one backing buffer per
//     file; their Data slices are capped so that appending to one never
//     overwrites another.
//
// Functions hold no state and are safe to call from many goroutines, as long
// as two writers do not target the same path at once.
package safetensors

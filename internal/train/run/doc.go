// Package run holds verisim's training runs: continued pretraining on a
// corpus of text (Pretrain) and supervised fine-tuning on agent episodes
// (SFT). Both drive a train.Trainer through one step loop that draws
// batches in a resumable order, measures a held-out loss, records metrics,
// draws the loss curve, shows progress and saves checkpoints; they differ
// only in where their data comes from and in what they measure around the
// loop (the unigram baseline of a corpus; the rate of well-formed tool
// calls before and after SFT).
//
// # The output directory
//
// A run writes into its Out directory:
//
//	checkpoint/      the trainer's checkpoint (train.Trainer.Save: config.json,
//	                 safetensors weights, optimiser state, trainer_state.json)
//	                 plus the model's tokenizer.json, so that the engine loads
//	                 it like any model directory
//	metrics.jsonl    one Metric per line: step 0 (the held-out loss before
//	                 training, when there is held-out data), then one per step
//	loss.png         the training and held-out loss, and the unigram baseline
//	                 when there is one
//	run-state.json   the settings a resumed run must share and the data order
//	                 at the last two saves
//
// # What it promises
//
//   - Resume determinism: a pretraining run stopped after any save and
//     continued with Resume draws the same batches in the same order and
//     writes the same metrics.jsonl, apart from the wall-time field
//     Seconds, as one that never stopped. run-state.json lists a save
//     point before the checkpoint is written and keeps the one before it,
//     so whichever checkpoint a crash leaves has its data state there; a
//     resumed run drops metrics past its checkpoint.
//   - Atomic writes: the checkpoint directory, the model's tokenizer.json
//     included (train.Options.Files), is replaced whole by
//     train.Builtin.Save, and run-state.json, loss.png and metrics.jsonl
//     when it is rewritten are written whole or not at all (atomicfile),
//     so a crash never leaves half of one. metrics.jsonl grows by appended
//     lines; those past the checkpoint a run resumes from are dropped.
//   - Refusal before writing: a run that would overwrite a checkpoint, a
//     resume whose model, corpus or settings differ, and options that
//     cannot work are refused before anything in Out changes, with an
//     error that wraps ErrUsage (ErrTasks for a task suite that cannot be
//     used). Those errors name options by the flags of verisim pretrain
//     and verisim sft, which set them one to one.
//   - Cancellation: when ctx is cancelled a run stops after the step in
//     progress, saves that step's checkpoint if it has not been saved, and
//     returns an error that says where Out stands.
//
// A run is not safe to share: one Pretrain or SFT call owns its Out
// directory and its trainer until it returns.
package run

// Package image turns a user's choice of machine ("host", a root filesystem
// directory, an OCI image archive, or a name made by "verisim image build")
// into read-only layers and binds for a sandbox.Spec.
//
// A Store keeps everything it generates under one directory:
//
//	<dir>/host/<key>/rootfs     host-composed layer (copy of /etc, top-level
//	                            dirs and symlinks); key hashes the host's /etc
//	<dir>/oci/<digest>/rootfs   flattened OCI or docker-save archive, keyed by
//	                            the image config's digest
//	<dir>/built/<name>/rootfs   debootstrap images made by Store.Build
//	<dir>/*/<id>/image.json     what the entry is and where it came from
//	<dir>/tmp/                  work in progress; renamed into place when done
//	<dir>/locks/                flock(2) files serialising work on one entry
//
// Every entry is built in tmp/ and renamed into place, so an entry that exists
// is complete; a failed or cancelled Resolve or Build leaves nothing behind.
// Entries are never modified once published, so their rootfs directories are
// safe to use as overlayfs lower layers by any number of sandboxes.
//
// A Store holds no mutable state in memory: its methods are safe for
// concurrent use, also from several processes sharing one directory.
package image

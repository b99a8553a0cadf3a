package persona

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"math/rand/v2"
)

// githubHostKey is github.com's published ed25519 host key, as it appears
// in the known_hosts of anyone who has cloned over ssh.
const githubHostKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"

// knownHosts is a known_hosts file with github.com in it, hashed as
// Debian's ssh_config (HashKnownHosts yes) writes it.
func knownHosts(r *rand.Rand) string {
	salt := make([]byte, sha1.Size)
	fill(r, salt)
	mac := hmac.New(sha1.New, salt)
	mac.Write([]byte("github.com"))
	enc := base64.StdEncoding
	return "|1|" + enc.EncodeToString(salt) + "|" + enc.EncodeToString(mac.Sum(nil)) + " " + githubHostKey + "\n"
}

// sshKeyPair is an unencrypted ed25519 key pair in the files ssh-keygen
// writes: the OpenSSH private key format and a one-line public key.
func sshKeyPair(r *rand.Rand, comment string) (private, public []byte) {
	seed := make([]byte, ed25519.SeedSize)
	fill(r, seed)
	priv := ed25519.NewKeyFromSeed(seed)
	pub := priv.Public().(ed25519.PublicKey)

	pubBlob := sshString(nil, []byte("ssh-ed25519"))
	pubBlob = sshString(pubBlob, pub)

	check := r.Uint32()
	var sec []byte
	sec = binary.BigEndian.AppendUint32(sec, check)
	sec = binary.BigEndian.AppendUint32(sec, check)
	sec = sshString(sec, []byte("ssh-ed25519"))
	sec = sshString(sec, pub)
	sec = sshString(sec, priv) // seed || public key, 64 bytes
	sec = sshString(sec, []byte(comment))
	for i := byte(1); len(sec)%8 != 0; i++ {
		sec = append(sec, i)
	}

	body := []byte("openssh-key-v1\x00")
	body = sshString(body, []byte("none")) // cipher
	body = sshString(body, []byte("none")) // kdf
	body = sshString(body, nil)            // kdf options
	body = binary.BigEndian.AppendUint32(body, 1)
	body = sshString(body, pubBlob)
	body = sshString(body, sec)

	private = pemWrapped(body)
	public = []byte("ssh-ed25519 " + base64.StdEncoding.EncodeToString(pubBlob) + " " + comment + "\n")
	return private, public
}

// pemWrapped armours an OpenSSH private key, 70 base64 characters a line
// as ssh-keygen writes it (encoding/pem would use 64).
func pemWrapped(body []byte) []byte {
	b64 := base64.StdEncoding.EncodeToString(body)
	out := []byte("-----BEGIN OPENSSH PRIVATE KEY-----\n")
	for len(b64) > 70 {
		out = append(out, b64[:70]...)
		out = append(out, '\n')
		b64 = b64[70:]
	}
	out = append(out, b64...)
	out = append(out, "\n-----END OPENSSH PRIVATE KEY-----\n"...)
	return out
}

func sshString(dst, s []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(s)))
	return append(dst, s...)
}

func fill(r *rand.Rand, b []byte) {
	for i := range b {
		b[i] = byte(r.Uint32())
	}
}

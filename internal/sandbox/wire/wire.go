// Package wire is the protocol between a sandbox's host side and the init
// that runs as PID 1 inside it. Every backend speaks it, so a namespace
// sandbox, a microVM and a pod differ only in how the machine boots and how a
// connection reaches the init (a unix socket, vsock, a port-forward).
//
// One connection carries one request. The host writes a Request frame; the
// init answers with a Response frame and, for exec and file reads, a stream
// of further frames. See docs/sandbox-protocol.md for the byte layout.
//
// Frames are not safe for concurrent writes; Conn serialises writers.
package wire

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Frame types.
const (
	TypeRequest  byte = 'Q' // host → init: JSON Request, first frame of a connection
	TypeResponse byte = 'R' // init → host: JSON Response
	TypeStdin    byte = 'I' // host → init: stdin bytes
	TypeStdinEOF byte = 'i' // host → init: stdin closed
	TypeResize   byte = 'W' // host → init: JSON WinSize
	TypeStdout   byte = 'O' // init → host: stdout bytes
	TypeStderr   byte = 'E' // init → host: stderr bytes
	TypeExit     byte = 'X' // init → host: JSON Exit, last frame of an exec
	TypeData     byte = 'D' // either way: file content chunk
	TypeDataEnd  byte = 'd' // either way: end of file content
)

// MaxFrame bounds a frame's payload; larger data is split into chunks.
const MaxFrame = 1 << 20

// ChunkSize is the payload size used for streamed bytes.
const ChunkSize = 32 << 10

// Ops of a Request.
const (
	OpExec    = "exec"
	OpRead    = "read"
	OpWrite   = "write"
	OpReadDir = "readdir"
	OpStat    = "stat"
	// OpSignal signals a running command's process tree, from a connection
	// of its own.
	OpSignal = "signal"
	// OpPause stops every process of the sandbox but the init and keeps
	// them stopped, starting no command, until the connection closes: how
	// a host copies the writable layer of a sandbox without a cgroup
	// freezer.
	OpPause = "pause"
	// OpKillAll kills every process of the sandbox but the init, and
	// answers once they are gone: what starts no process, which a sandbox
	// at its pids limit could not.
	OpKillAll = "kill_all"
)

// Request is the first frame of every connection.
type Request struct {
	Op string `json:"op"`
	// Exec.
	Args      []string `json:"args,omitempty"`
	Env       []string `json:"env,omitempty"`
	Dir       string   `json:"dir,omitempty"`
	UID       uint32   `json:"uid"`
	GID       uint32   `json:"gid"`
	Groups    []uint32 `json:"groups,omitempty"`
	TimeoutMS int64    `json:"timeout_ms,omitempty"`
	TTY       *WinSize `json:"tty,omitempty"`
	// File ops.
	Path string `json:"path,omitempty"`
	Mode uint32 `json:"mode,omitempty"`
	// AsUser makes a file op act as UID, GID and Groups, with their
	// permissions, instead of as the init (root): what an agent's tools
	// ask for. A write's new file then belongs to them.
	AsUser bool `json:"as_user,omitempty"`
	// Signal: the command's pid (from its exec response) and the signal.
	PID    int `json:"pid,omitempty"`
	Signal int `json:"signal,omitempty"`
}

// WinSize is a terminal size.
type WinSize struct {
	Rows uint16 `json:"rows"`
	Cols uint16 `json:"cols"`
}

// Response answers a Request. Error is set when the request failed.
type Response struct {
	Error *Error `json:"error,omitempty"`
	// Exec: the command's pid inside the sandbox.
	PID int `json:"pid,omitempty"`
	// Stat and ReadDir. A directory too large for one frame comes in
	// several responses, each but the last with More.
	Files []FileInfo `json:"files,omitempty"`
	More  bool       `json:"more,omitempty"`
	// Read: the file's size.
	Size int64 `json:"size,omitempty"`
}

// FileInfo describes one file.
type FileInfo struct {
	Name    string `json:"name"`
	Size    int64  `json:"size"`
	Mode    uint32 `json:"mode"` // io/fs.FileMode bits
	ModTime int64  `json:"mtime_ns"`
	Link    string `json:"link,omitempty"`
}

// Exit reports how a command ended.
type Exit struct {
	Code     int  `json:"code"`
	Signal   int  `json:"signal,omitempty"`
	TimedOut bool `json:"timed_out,omitempty"`
}

// Error codes are stable across versions.
const (
	CodeNotFound        = "not_found"
	CodeExists          = "exists"
	CodePermission      = "permission"
	CodeNotDir          = "not_dir"
	CodeIsDir           = "is_dir"
	CodeCommandNotFound = "command_not_found"
	CodeNoSpace         = "no_space"
	CodeInvalid         = "invalid"
	CodeNotRegular      = "not_regular"
	CodeTooLarge        = "too_large"
	CodeInternal        = "internal"
)

// Error is a failure reported across the wire.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Errno is the system error number behind the failure, when there is
	// one (ELOOP, ENAMETOOLONG, EROFS, ...), for the host to test with
	// errors.Is like a local one.
	Errno int `json:"errno,omitempty"`
}

func (e *Error) Error() string { return e.Message }

// Conn frames a byte stream. Reads must come from one goroutine; writes may
// come from many.
type Conn struct {
	r  *bufio.Reader
	w  io.Writer
	mu sync.Mutex
	// hdr is reused by writers under mu.
	hdr [5]byte
}

// NewConn wraps rw.
func NewConn(rw io.ReadWriter) *Conn {
	// Small: one Conn per request, and large payloads bypass the buffer.
	return &Conn{r: bufio.NewReaderSize(rw, 4<<10), w: rw}
}

// ErrFrameTooLarge is returned for a frame above MaxFrame.
var ErrFrameTooLarge = errors.New("wire: frame too large")

// Write sends one frame.
func (c *Conn) Write(typ byte, payload []byte) error {
	if len(payload) > MaxFrame {
		return ErrFrameTooLarge
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	binary.BigEndian.PutUint32(c.hdr[:4], uint32(len(payload)+1))
	c.hdr[4] = typ
	if len(payload) == 0 {
		_, err := c.w.Write(c.hdr[:])
		return err
	}
	// One write per frame keeps frames whole on the socket and halves syscalls
	// for small payloads.
	buf := make([]byte, 5+len(payload))
	copy(buf, c.hdr[:])
	copy(buf[5:], payload)
	_, err := c.w.Write(buf)
	return err
}

// WriteJSON sends v as a JSON frame. A v that encodes itself (the
// messages the init sends for every command) skips encoding/json.
func (c *Conn) WriteJSON(typ byte, v any) error {
	var (
		b   []byte
		err error
	)
	if m, ok := v.(json.Marshaler); ok {
		b, err = m.MarshalJSON()
	} else {
		b, err = json.Marshal(v)
	}
	if err != nil {
		return fmt.Errorf("wire: encode %c: %w", typ, err)
	}
	return c.Write(typ, b)
}

// Read returns the next frame. The payload is valid until the next Read.
func (c *Conn) Read() (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(c.r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:4])
	if n == 0 {
		return 0, nil, fmt.Errorf("wire: zero-length frame")
	}
	if n-1 > MaxFrame {
		return 0, nil, ErrFrameTooLarge
	}
	payload := make([]byte, n-1)
	if _, err := io.ReadFull(c.r, payload); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return hdr[4], payload, nil
}

// ReadJSON reads a frame that must be of type typ and decodes it into v.
func (c *Conn) ReadJSON(typ byte, v any) error {
	t, p, err := c.Read()
	if err != nil {
		return err
	}
	if t != typ {
		return fmt.Errorf("wire: got frame %q, want %q", t, typ)
	}
	// A v that decodes itself (the messages the init reads for every
	// command) skips encoding/json.
	if u, ok := v.(json.Unmarshaler); ok {
		return u.UnmarshalJSON(p)
	}
	return json.Unmarshal(p, v)
}

// WriteStream copies r into data frames of type typ, ending with end.
func (c *Conn) WriteStream(typ, end byte, r io.Reader) error {
	buf := make([]byte, ChunkSize)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if werr := c.Write(typ, buf[:n]); werr != nil {
				return werr
			}
		}
		if errors.Is(err, io.EOF) {
			return c.Write(end, nil)
		}
		if err != nil {
			return err
		}
	}
}

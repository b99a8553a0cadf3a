package wire

import (
	"github.com/verisim/verisim/internal/sandbox/wire/jsonlite"
)

// The messages the init reads and writes for every command decode and
// encode themselves (package jsonlite says why); the bytes are the ones
// encoding/json reads and writes for the same fields.

// UnmarshalJSON decodes a Request into a zero Request.
func (q *Request) UnmarshalJSON(b []byte) error {
	*q = Request{}
	return jsonlite.Decode(b, "request", func(r *jsonlite.Reader, key string) error {
		switch key {
		case "op":
			return r.StringTo(&q.Op)
		case "args":
			return r.StringsTo(&q.Args)
		case "env":
			return r.StringsTo(&q.Env)
		case "dir":
			return r.StringTo(&q.Dir)
		case "uid":
			return r.Uint32To(&q.UID)
		case "gid":
			return r.Uint32To(&q.GID)
		case "groups":
			return r.Uints32To(&q.Groups)
		case "timeout_ms":
			return r.Int64To(&q.TimeoutMS)
		case "tty":
			return jsonlite.PtrTo(r, &q.TTY, func(w *WinSize, key string) error { return w.field(r, key) })
		case "path":
			return r.StringTo(&q.Path)
		case "mode":
			return r.Uint32To(&q.Mode)
		case "as_user":
			return r.BoolTo(&q.AsUser)
		case "pid":
			return r.IntTo(&q.PID)
		case "signal":
			return r.IntTo(&q.Signal)
		}
		return r.Skip()
	})
}

// UnmarshalJSON decodes a WinSize into a zero WinSize.
func (w *WinSize) UnmarshalJSON(b []byte) error {
	*w = WinSize{}
	return jsonlite.Decode(b, "window size", w.field)
}

// field reads the value of one of a WinSize's keys.
func (w *WinSize) field(r *jsonlite.Reader, key string) error {
	switch key {
	case "rows":
		return r.Uint16To(&w.Rows)
	case "cols":
		return r.Uint16To(&w.Cols)
	}
	return r.Skip()
}

// MarshalJSON encodes a Response.
func (p Response) MarshalJSON() ([]byte, error) {
	o := jsonlite.NewObject(make([]byte, 0, 64))
	if p.Error != nil {
		e := jsonlite.NewObject(nil).Key("code").String(p.Error.Code).Key("message").String(p.Error.Message)
		if p.Error.Errno != 0 {
			e.Key("errno").Int(int64(p.Error.Errno))
		}
		o.Key("error").Raw(e.Close())
	}
	if p.PID != 0 {
		o.Key("pid").Int(int64(p.PID))
	}
	if len(p.Files) > 0 {
		fs := []byte{'['}
		for i, f := range p.Files {
			if i > 0 {
				fs = append(fs, ',')
			}
			fo := jsonlite.NewObject(fs).Key("name").String(f.Name).Key("size").Int(f.Size).
				Key("mode").Uint(uint64(f.Mode)).Key("mtime_ns").Int(f.ModTime)
			if f.Link != "" {
				fo.Key("link").String(f.Link)
			}
			fs = fo.Close()
		}
		o.Key("files").Raw(append(fs, ']'))
	}
	if p.More {
		o.Key("more").Bool(true)
	}
	if p.Size != 0 {
		o.Key("size").Int(p.Size)
	}
	return o.Close(), nil
}

// MarshalJSON encodes an Exit.
func (x Exit) MarshalJSON() ([]byte, error) {
	o := jsonlite.NewObject(make([]byte, 0, 32)).Key("code").Int(int64(x.Code))
	if x.Signal != 0 {
		o.Key("signal").Int(int64(x.Signal))
	}
	if x.TimedOut {
		o.Key("timed_out").Bool(true)
	}
	return o.Close(), nil
}

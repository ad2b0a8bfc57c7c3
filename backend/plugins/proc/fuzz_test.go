package proc

import (
	"encoding/json"
	"testing"
)

// FuzzParseMessage: any line a plugin writes is a JSON-RPC 2.0 message or
// an error quoting at most a short part of it; decoding the params a host
// reads from it never panics.
func FuzzParseMessage(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{"protocol_version":1,"hooks":["on_session_delete"]}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"event_done","params":{"event_id":"e","status":"ok"}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"log","params":{"level":"info","message":"hi"}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":7,"error":{"code":-32000,"message":"boom","data":{"traceback":"x"}}}`))
	f.Add([]byte("Loading model weights..."))
	f.Add([]byte(`{"jsonrpc":"1.0"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := parseMessage(line)
		if err != nil {
			if len(err.Error()) > 300 {
				t.Fatalf("a %d-byte error", len(err.Error()))
			}
			return
		}
		var d EventDoneParams
		_ = json.Unmarshal(m.Params, &d)
		var lp LogParams
		_ = json.Unmarshal(m.Params, &lp)
		var res InitializeResult
		if json.Unmarshal(m.Result, &res) == nil {
			_ = validate(res)
		}
		if m.Error != nil {
			_ = m.Error.Error()
		}
	})
}

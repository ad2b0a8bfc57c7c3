package turns

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"atrium/backend/llm"
)

// Tool is a function the model may call.
type Tool struct {
	Spec llm.ToolSpec
	Run  func(ctx context.Context, args string) (string, error)
}

func textArg(args string) string {
	var a struct {
		Text string `json:"text"`
	}
	if json.Unmarshal([]byte(args), &a) == nil {
		return a.Text
	}
	return args
}

// BuiltinTools are the tools every loop offers: echo, and big_output, whose
// large result exercises the post-tool compaction path.
func BuiltinTools() map[string]Tool {
	return map[string]Tool{
		"echo": {
			Spec: llm.ToolSpec{Name: "echo", Description: "Returns its text argument.", Parameters: `{"type":"object","properties":{"text":{"type":"string"}}}`},
			Run:  func(_ context.Context, args string) (string, error) { return textArg(args), nil },
		},
		"big_output": {
			Spec: llm.ToolSpec{Name: "big_output", Description: "Returns a large, repetitive log (about 24 KB).", Parameters: `{"type":"object","properties":{"text":{"type":"string"}}}`},
			Run: func(_ context.Context, args string) (string, error) {
				var b strings.Builder
				for i := 0; i < 400; i++ {
					fmt.Fprintf(&b, "line %03d: build step %s finished in %d ms\n", i, nonEmpty(textArg(args), "compile"), 10+i%90)
				}
				return b.String(), nil
			},
		},
	}
}

func nonEmpty(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}

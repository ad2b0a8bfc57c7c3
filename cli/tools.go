package cli

import (
	"cmp"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"atrium/backend/config"
	"atrium/backend/stack"
	"atrium/backend/tools"
)

// toolStatus is one of the agent's tools on a platform: offered, or why
// not.
type toolStatus struct {
	Name    string `json:"name"`
	Toolset string `json:"toolset"`
	Offered bool   `json:"offered"`
	Why     string `json:"why,omitempty"`
}

// toolsCmd says which of the agent's tools a turn on a platform offers,
// and why each other one is not: toolsets leave it out, the terminal's
// backend is not Atrium's, the web has no provider's key, no model can
// see images, no TTS provider can speak, memory is off.
func (r *runner) toolsCmd() *cobra.Command {
	var platform string
	c := &cobra.Command{
		Use:   "tools",
		Short: "The agent's tools on a platform (--platform, default cli): which a turn offers, and why the others are not",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := config.ResolveHome(r.g.home, r.g.profile)
			if err != nil {
				return err
			}
			cfg, _, err := config.Load(home.ConfigPath())
			if err != nil {
				return err
			}
			s := stack.ToolsOf(home, cfg)
			on, _ := s.Enabled(platform)
			listed := s.Listed(platform)
			toolset := map[string]string{}
			for _, t := range tools.All() {
				toolset[t.Name] = t.Toolset
			}
			toolset[tools.DelegateTool] = tools.DelegateToolset
			var out []toolStatus
			for _, name := range tools.Offered() {
				st := toolStatus{Name: name, Toolset: cmp.Or(toolset[name], name), Offered: on[name]}
				switch {
				case !listed[name]:
					st.Why = "toolsets leave it out on " + platform
				case (name == "terminal" || name == "process") && !on[name]:
					st.Why = s.TerminalProblem()
				case (name == tools.WebSearchTool || name == tools.WebExtractTool) && !on[name]:
					st.Why = s.Web.Problem()
				case name == tools.SendMessageTool && !on[name]:
					st.Why = s.Messaging.Problem()
				case name == tools.VisionAnalyzeTool && !on[name]:
					st.Why = s.Vision.Problem()
				case name == tools.TextToSpeechTool && !on[name]:
					st.Why = s.Speech.Problem()
				case name == tools.MemoryTool && !s.Memory.On():
					st.Offered, st.Why = false, "memory.memory_enabled and memory.user_profile_enabled are off"
				case name == tools.ClarifyTool:
					st.Why = "where a person can answer: the window, the dashboard, a terminal chat, a chat platform (not a scheduled run, a piped chat or send)"
				}
				out = append(out, st)
			}
			return r.print(out, func(w io.Writer) {
				for _, t := range out {
					mark := "yes"
					if !t.Offered {
						mark = "no "
					}
					if t.Why != "" {
						fmt.Fprintf(w, "%s %-15s %s\n", mark, t.Name, t.Why)
					} else {
						fmt.Fprintf(w, "%s %s\n", mark, t.Name)
					}
				}
			})
		},
	}
	c.Flags().StringVar(&platform, "platform", "cli", "the platform whose turns are meant (cli, desktop, dashboard, telegram, slack, ...)")
	return c
}

package config

import (
	"slices"
	"strings"
)

// familiarSecrets are the names the familiar agent's `config set` writes to
// its .env rather than to config.yaml.
var familiarSecrets = []string{
	"OPENROUTER_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "VOICE_TOOLS_OPENAI_KEY", "EXA_API_KEY",
	"PARALLEL_API_KEY", "FIRECRAWL_API_KEY", "FIRECRAWL_API_URL", "FIRECRAWL_GATEWAY_URL", "TOOL_GATEWAY_DOMAIN",
	"TOOL_GATEWAY_SCHEME", "TOOL_GATEWAY_USER_TOKEN", "TAVILY_API_KEY", "BROWSERBASE_API_KEY", "BROWSERBASE_PROJECT_ID",
	"BROWSER_USE_API_KEY", "FAL_KEY", "TELEGRAM_BOT_TOKEN", "DISCORD_BOT_TOKEN", "TERMINAL_SSH_HOST", "TERMINAL_SSH_USER",
	"TERMINAL_SSH_KEY", "SUDO_PASSWORD", "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "GITHUB_TOKEN", "HONCHO_API_KEY",
	"WANDB_API_KEY", "TINKER_API_KEY",
}

// SecretVariable reports whether name (any case) is a key's or a token's
// variable by the familiar agent's rule for what goes to .env: one it
// lists, or one ending in _API_KEY, _TOKEN or _SECRET, or starting with
// TERMINAL_SSH. A dotted name is a setting, never a variable.
func SecretVariable(name string) bool {
	if name == "" || strings.Contains(name, ".") {
		return false
	}
	up := strings.ToUpper(name)
	return slices.Contains(familiarSecrets, up) || strings.HasSuffix(up, "_API_KEY") || strings.HasSuffix(up, "_TOKEN") ||
		strings.HasSuffix(up, "_SECRET") || strings.HasPrefix(up, "TERMINAL_SSH")
}

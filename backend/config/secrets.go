package config

import (
	"reflect"
	"slices"
	"strings"

	"atrium/backend/apperr"
	"atrium/backend/dotenv"
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

// managedCredentials are the variables Atrium, or the familiar agent,
// reads its own keys from by default (the model providers', the tools',
// the chat platforms', the webhooks' signing secret) beyond
// familiarSecrets.
var managedCredentials = []string{
	"LM_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY", "GROQ_API_KEY", "MISTRAL_API_KEY", "DEEPSEEK_API_KEY", "XAI_API_KEY",
	"NOUS_API_KEY", "ELEVENLABS_API_KEY", "SLACK_SIGNING_SECRET", "GH_TOKEN", "ATRIUM_WEBHOOK_SECRET", "AWS_ACCESS_KEY_ID",
	"AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AZURE_CLIENT_SECRET", "AZURE_PASSWORD",
}

// ManagedCredential reports whether name (any case) is one of the keys
// Atrium itself works with (ManagedCredential's lists, an auxiliary
// model's AUXILIARY_*_API_KEY): never handed to the agent's commands on a
// skill's say (a skill's required_environment_variables), which a
// conversation can write. A configuration's own *_env variables are
// Config.CredentialVariables.
func ManagedCredential(name string) bool {
	up := strings.ToUpper(strings.TrimSpace(name))
	return slices.Contains(familiarSecrets, up) || slices.Contains(managedCredentials, up) ||
		strings.HasPrefix(up, "AUXILIARY_") && strings.HasSuffix(up, "_API_KEY")
}

// CredentialVariables are the variables c reads keys, tokens and secrets
// from: the value of every setting named *_env (the model's and the
// auxiliary models' api_key_env, the gateway's token_env and
// signing_secret_env, the webhooks' secret_env, ...), upper case.
func (c Config) CredentialVariables() []string {
	var out []string
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer, reflect.Interface:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Struct:
			t := v.Type()
			for i := range t.NumField() {
				f := t.Field(i)
				if !f.IsExported() {
					continue
				}
				tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
				if fv := v.Field(i); fv.Kind() == reflect.String && strings.HasSuffix(tag, "_env") {
					if name := strings.ToUpper(strings.TrimSpace(fv.String())); name != "" && !slices.Contains(out, name) {
						out = append(out, name)
					}
				} else {
					walk(fv)
				}
			}
		case reflect.Slice, reflect.Array:
			for i := range v.Len() {
				walk(v.Index(i))
			}
		case reflect.Map:
			for _, k := range v.MapKeys() {
				walk(v.MapIndex(k))
			}
		}
	}
	walk(reflect.ValueOf(c))
	return out
}

// CommandEnv is the environment a command the agent's machine runs for it
// gets (a terminal command, a transcription command): env without the
// keys' and tokens' variables (the profile's .env among them) unless
// passthrough names them.
func CommandEnv(env, passthrough []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if SecretVariable(name) && !slices.ContainsFunc(passthrough, func(p string) bool { return strings.EqualFold(strings.TrimSpace(p), name) }) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// programVariables are names that change how programs start or where they
// look for code: never written to .env on a plugin's or a page's say.
var programVariables = []string{"PATH", "HOME", "SHELL", "USER", "IFS", "ENV", "BASH_ENV", "NODE_OPTIONS", "PERL5OPT",
	"RUBYOPT", "GCONV_PATH", "TMPDIR", "ATRIUM_HOME", "HERMES_HOME"}

// ProgramVariable reports whether name (any case) is one of those, or a
// loader's or a language runtime's (LD_*, DYLD_*, PYTHON*, GIT_*, XDG_*):
// a variable a plugin's manifest may name but Atrium never asks for, nor
// saves from a page, since its value would run code in every program the
// profile starts.
func ProgramVariable(name string) bool {
	up := strings.ToUpper(name)
	for _, p := range []string{"LD_", "DYLD_", "PYTHON", "GIT_", "XDG_"} {
		if strings.HasPrefix(up, p) {
			return true
		}
	}
	return slices.Contains(programVariables, up)
}

// SetSecret keeps name=value in the profile's .env (only that key's line
// changes; a new file is private), and gives this process the value unless
// its environment had name already (which goes first). A value the file
// cannot hold is refused (Invalid), saying why but never the value; a file
// that cannot be written is Rejected, as every write on a read-only or
// full disk is.
func (h Home) SetSecret(name, value string) error {
	path := h.EnvPath()
	if err := dotenv.CheckValue(value); err != nil {
		return apperr.New(apperr.Invalid, "%s: %v; %s is unchanged", name, err, path)
	}
	if err := dotenv.Update(path, func(text string) (string, error) { return dotenv.Set(text, name, value) }); err != nil {
		return secretUnchanged(err, name, path)
	}
	if dotenv.Exported(name) {
		return nil
	}
	return dotenv.Setenv(path, name, value)
}

// RefreshEnv gives this process the profile's .env as the file is now
// (another process may have written it since it was read at start); what
// the process was started with still goes first. A .env that cannot be
// read changes nothing and is the error.
func (h Home) RefreshEnv() error {
	_, err := dotenv.Refresh(h.EnvPath())
	return err
}

// UnsetSecret removes name from the profile's .env (removed: it was
// there), and from this process unless its environment had it.
func (h Home) UnsetSecret(name string) (removed bool, err error) {
	path := h.EnvPath()
	err = dotenv.Update(path, func(text string) (string, error) {
		out, ok, err := dotenv.Unset(text, name)
		removed = ok
		return out, err
	})
	if err != nil {
		return false, secretUnchanged(err, name, path)
	}
	if !dotenv.Exported(name) {
		err = dotenv.Unsetenv(name)
	}
	return removed, err
}

// SecretIn says where name is set: in the profile's .env, and exported
// where this process started (which goes first). err is the .env's, when it
// cannot be read.
func (h Home) SecretIn(name string) (inFile, exported bool, err error) {
	text, _, _, err := dotenv.Read(h.EnvPath())
	return err == nil && slices.Contains(dotenv.Names(text), name), dotenv.Exported(name), err
}

// secretUnchanged is the error of an edit of .env that wrote nothing: the
// edit refused, or a file that cannot be written.
func secretUnchanged(err error, name, path string) error {
	code := apperr.Invalid
	if Unwritable(err) {
		code = apperr.Rejected
	}
	return apperr.Wrap(code, err, "%s: %s is unchanged", name, path)
}

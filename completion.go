package main

import (
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/drainctl/drainctl/ui/auto"
)

// completion prints a completion script for shell, from the flag set and the verbs, so it
// cannot fall behind them. Install: drainctl completion bash > /etc/bash_completion.d/drainctl;
// zsh: drainctl completion zsh > "${fpath[1]}/_drainctl"; fish: drainctl completion fish >
// ~/.config/fish/completions/drainctl.fish.
func completion(w io.Writer, shell string, fs *flag.FlagSet) error {
	var flags []string
	fs.VisitAll(func(f *flag.Flag) {
		if len(f.Name) > 1 {
			flags = append(flags, f.Name)
		}
	})
	sort.Strings(flags)
	verbs := strings.Split(strings.ReplaceAll(auto.Verbs(), ",", ""), " ")
	switch shell {
	case "bash":
		fmt.Fprintf(w, `# bash completion for drainctl (drainctl completion bash)
_drainctl() {
	local cur="${COMP_WORDS[COMP_CWORD]}"
	local verbs="%s version completion"
	local flags="%s"
	case "$cur" in
	-*) COMPREPLY=($(compgen -W "$flags" -- "$cur")) ;;
	*)  COMPREPLY=($(compgen -W "$verbs" -- "$cur")) ;;
	esac
}
complete -F _drainctl drainctl kubectl-drainctl
`, strings.Join(verbs, " "), "--"+strings.Join(flags, " --"))
	case "zsh":
		fmt.Fprintf(
			w,
			"#compdef drainctl kubectl-drainctl\n# zsh completion for drainctl (drainctl completion zsh)\n_drainctl() {\n\t_arguments \\\n",
		)
		for _, f := range flags {
			fmt.Fprintf(w, "\t\t'--%s[%s]' \\\n", f, f)
		}
		fmt.Fprintf(w, "\t\t'*:verb:(%s version completion)'\n}\n_drainctl \"$@\"\n", strings.Join(verbs, " "))
	case "fish":
		fmt.Fprintln(w, "# fish completion for drainctl (drainctl completion fish)")
		for _, v := range append(verbs, "version", "completion") {
			fmt.Fprintf(w, "complete -c drainctl -f -n '__fish_use_subcommand' -a %s\n", v)
		}
		for _, f := range flags {
			fmt.Fprintf(w, "complete -c drainctl -l %s\n", f)
		}
	default:
		return fmt.Errorf("unknown shell %q: use bash, zsh or fish", shell)
	}
	return nil
}

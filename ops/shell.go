package ops

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// runShell runs an operator's command line for a node (--exec, --fence-cmd): {node} is
// replaced by the node's name, quoted for the shell, and DRAINCTL_NODE / DRAINCTL_HOST are
// set. Each line it prints goes to line as it comes. The error says how it ended, with its
// last line.
func runShell(ctx context.Context, flag, template, node, host string, line func(string)) error {
	cmdline := strings.ReplaceAll(template, "{node}", shellQuote(node))
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", cmdline)
	cmd.Env = append(os.Environ(), "DRAINCTL_NODE="+node, "DRAINCTL_HOST="+host)
	out, w := io.Pipe()
	cmd.Stdout, cmd.Stderr = w, w
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: %w", flag, err)
	}
	var last string
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			last = sc.Text()
			line(last)
		}
	}()
	err := cmd.Wait()
	w.Close()
	<-done
	switch {
	case err == nil:
		return nil
	case last != "":
		return fmt.Errorf("%s %s: %w (last line: %s)", flag, cmdline, err, last)
	}
	return fmt.Errorf("%s %s: %w", flag, cmdline, err)
}

// shellQuote quotes s for /bin/sh. Node names are DNS names, but the command line must not
// depend on it.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

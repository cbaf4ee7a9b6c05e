package opcmd

import (
	"slices"
	"testing"
)

// A secret written out in a command line is named (to warn at load); one taken from the
// environment is not.
func TestLiteralSecrets(t *testing.T) {
	for cmd, want := range map[string][]string{
		"ipmitool -I lanplus -H {node}-bmc -U admin -P hunter2 chassis power off": {"-P"},
		"fence_ipmilan -a {node}-bmc -l admin -PHunter2 -o off":                   {"-P"},
		"sshpass -p s3cret ssh -- {node} poweroff":                                {"-p"},
		"curl --user=a:b https://bmc/{node}/off":                                  {"--user="},
		"env BMC_PW=hunter2 fence {node}":                                         {"BMC_PW="},
		"curl -H 'X-Auth-Token: abc' https://bmc/{node}":                          {"'X-Auth-Token:"},
		"curl https://admin:pw@bmc/{node}/off":                                    {"a URL's password"},
		`ipmitool -H {node}-bmc -U admin -P "$IPMI_PASSWORD" power off`:           nil,
		"ipmitool -E -H {node}-bmc -U admin power off":                            nil,
		"env BMC_PW=$BMC_PW fence {node}":                                         nil,
		"ssh -- {node} sudo poweroff":                                             nil,
		"ssh -p 2222 -- {node} sudo poweroff":                                     nil,
	} {
		if got := LiteralSecrets(cmd); !slices.Equal(got, want) {
			t.Errorf("%s: %q, want %q", cmd, got, want)
		}
	}
}

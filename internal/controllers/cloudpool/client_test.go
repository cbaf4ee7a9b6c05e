package cloudpool

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestMachineFor(t *testing.T) {
	ms := []Machine{{ID: "openstack:///abc-1"}, {ID: "def-2"}, {ID: "node-3"}}
	for _, tc := range []struct{ node, provider, want string }{
		{"x", "openstack:///abc-1", "openstack:///abc-1"}, // the providerID itself
		{"x", "openstack:///def-2", "def-2"},              // its last path segment
		{"node-3", "", "node-3"},                          // else the node's name
		{"node-9", "openstack:///none", ""},               // no machine: not paired
	} {
		m, ok := MachineFor(ms, tc.node, tc.provider)
		if (tc.want == "") == ok || m.ID != tc.want {
			t.Errorf("%s/%s: got %q %v, want %q", tc.node, tc.provider, m.ID, ok, tc.want)
		}
	}
}

// A password in the pool's URL never reaches a message.
func TestSecretsStayOutOfMessages(t *testing.T) {
	c := New("http://autoscaler:s3cret@127.0.0.1:1", time.Second)
	_, err := c.Machines(context.Background())
	if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "autoscaler:xxxxx@") {
		t.Errorf("error: %v", err)
	}
}

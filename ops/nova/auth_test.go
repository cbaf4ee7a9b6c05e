package nova

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/sim"
)

func getenv(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestResolveCredentials(t *testing.T) {
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "pw")
	os.WriteFile(pwFile, []byte("from-file\n"), 0o600)
	clouds := filepath.Join(dir, "clouds.yaml")
	os.WriteFile(clouds, []byte(`clouds:
  prod:
    auth:
      auth_url: https://keystone.prod:5000/v3
      username: ops
      password: cloud-pw
      project_name: admin
      user_domain_name: Default
      project_domain_name: Default
    region_name: RegionTwo
    interface: internal
`), 0o600)
	t.Setenv("OS_CLIENT_CONFIG_FILE", clouds)

	for _, tc := range []struct {
		desc   string
		legacy *model.OpenStackConfig
		table  model.OpenStackConfig
		env    map[string]string
		check  func(t *testing.T, c *Credentials)
		errSub string
	}{
		{desc: "nothing configured", check: func(t *testing.T, c *Credentials) {
			if c != nil {
				t.Errorf("want nil, got %+v", c)
			}
		}},
		{desc: "OS_* variables with split domains", env: map[string]string{"OS_AUTH_URL": "http://k/v3", "OS_USERNAME": "u",
			"OS_PASSWORD": "p", "OS_PROJECT_NAME": "proj", "OS_USER_DOMAIN_NAME": "Users", "OS_PROJECT_DOMAIN_NAME": "Projects",
			"OS_REGION_NAME": "R1", "OS_INTERFACE": "internal"},
			check: func(t *testing.T, c *Credentials) {
				if c.Auth.DomainName != "Users" || c.Auth.Scope.DomainName != "Projects" || c.Auth.Scope.ProjectName != "proj" ||
					c.Region != "R1" || c.Interface != "internal" || c.Source != "OS_* environment variables" {
					t.Errorf("%+v scope %+v", c, c.Auth.Scope)
				}
			}},
		{desc: "OS_CLOUD wins over OS_AUTH_URL", env: map[string]string{"OS_CLOUD": "prod", "OS_AUTH_URL": "http://other/v3"},
			check: func(t *testing.T, c *Credentials) {
				if c.Auth.IdentityEndpoint != "https://keystone.prod:5000/v3" || c.Region != "RegionTwo" || c.Interface != "internal" {
					t.Errorf("%+v", c)
				}
			}},
		{desc: "unknown cloud", env: map[string]string{"OS_CLOUD": "nope"}, errSub: `OpenStack credentials from OS_CLOUD=nope and clouds.yaml: cloud nope does not exist in clouds.yaml`},
		{desc: "table with password_file", table: model.OpenStackConfig{AuthURL: "http://k/v3", Username: "u", PasswordFile: pwFile, ProjectID: "p1"},
			check: func(t *testing.T, c *Credentials) {
				if c.Auth.Password != "from-file" || c.Auth.Scope.ProjectID != "p1" || c.Auth.DomainName != "Default" {
					t.Errorf("%+v", c.Auth)
				}
			}},
		{desc: "table password from OS_PASSWORD", table: model.OpenStackConfig{AuthURL: "http://k/v3", Username: "u", ProjectName: "p"},
			env: map[string]string{"OS_PASSWORD": "env-pw"},
			check: func(t *testing.T, c *Credentials) {
				if c.Auth.Password != "env-pw" {
					t.Errorf("%+v", c.Auth)
				}
			}},
		{desc: "table without password", table: model.OpenStackConfig{AuthURL: "http://k/v3", Username: "u", ProjectName: "p"},
			errSub: "OpenStack credentials from config.toml [openstack]: no password; set password_file, or OS_PASSWORD in the environment"},
		{desc: "table without project", table: model.OpenStackConfig{AuthURL: "http://k/v3", Username: "u", Password: "x"},
			errSub: "no project to scope the token to"},
		{desc: "table without auth_url", table: model.OpenStackConfig{Username: "u"}, errSub: "no auth_url"},
		{desc: "unreadable password file", table: model.OpenStackConfig{AuthURL: "http://k/v3", Username: "u", PasswordFile: "/nonexistent/pw", ProjectName: "p"},
			errSub: "cannot read secret file /nonexistent/pw"},
		{desc: "application credential", table: model.OpenStackConfig{AuthURL: "http://k/v3", ApplicationCredentialID: "ac1", ApplicationCredentialSecretFile: pwFile},
			check: func(t *testing.T, c *Credentials) {
				if c.Auth.ApplicationCredentialID != "ac1" || c.Auth.ApplicationCredentialSecret != "from-file" || c.Auth.Scope != nil {
					t.Errorf("%+v", c.Auth)
				}
			}},
		{desc: "application credential without secret", table: model.OpenStackConfig{AuthURL: "http://k/v3", ApplicationCredentialID: "ac1"},
			errSub: "an application credential without its secret"},
		{desc: "legacy config.yaml wins", legacy: &model.OpenStackConfig{AuthURL: "http://legacy/v3", Username: "admin", Password: "pw",
			ProjectName: "admin", UserDomainID: "default", ProjectDomainID: "default"}, env: map[string]string{"OS_CLOUD": "prod"},
			check: func(t *testing.T, c *Credentials) {
				if c.Auth.IdentityEndpoint != "http://legacy/v3" || c.Auth.DomainID != "default" || c.Auth.Scope.DomainID != "default" {
					t.Errorf("%+v %+v", c.Auth, c.Auth.Scope)
				}
			}},
		{desc: "bad cacert", table: model.OpenStackConfig{AuthURL: "http://k/v3", Username: "u", Password: "x", ProjectName: "p", CACert: pwFile},
			errSub: "holds no PEM certificate"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			env := tc.env
			if env == nil {
				env = map[string]string{}
			}
			c, err := ResolveCredentials(tc.legacy, tc.table, getenv(env))
			if tc.errSub != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errSub) {
					t.Fatalf("got %v, want an error containing %q", err, tc.errSub)
				}
				if !errors.As(err, new(*CredentialError)) {
					t.Errorf("credential errors are CredentialErrors (configuration: exit 2): %T", err)
				}
				for _, secret := range []string{"from-file", "env-pw", "cloud-pw"} {
					if strings.Contains(err.Error(), secret) {
						t.Errorf("error shows a secret: %v", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}

// A Keystone application credential (the restricted identity deploy/README.md recommends)
// authenticates on its own, through gophercloud, and a wrong secret is refused without
// the secret appearing in the error.
func TestApplicationCredential(t *testing.T) {
	w := sim.NewWorld(sim.Options{Users: []sim.User{{Name: "drainctl-ops", Project: "admin", AppCredID: "ac-1f2e", AppCredSecret: "ac-secret-value"}}})
	w.AddHost("compute-0", 32, 65536, 1000)
	srv, err := sim.Serve(w, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	env := map[string]string{"OS_AUTH_URL": srv.IdentityURL(), "OS_AUTH_TYPE": "v3applicationcredential",
		"OS_APPLICATION_CREDENTIAL_ID": "ac-1f2e", "OS_APPLICATION_CREDENTIAL_SECRET": "ac-secret-value", "OS_REGION_NAME": "RegionOne"}
	creds, err := ResolveCredentials(nil, model.OpenStackConfig{}, getenv(env))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Connect(ctx, creds, Options{})
	if err != nil {
		t.Fatalf("connect with an application credential: %v", err)
	}
	if svcs, err := c.ComputeServices(ctx, ""); err != nil || len(svcs) != 1 {
		t.Errorf("services %v %v", svcs, err)
	}
	env["OS_APPLICATION_CREDENTIAL_SECRET"] = "wrong-secret-value"
	creds, _ = ResolveCredentials(nil, model.OpenStackConfig{}, getenv(env))
	_, err = Connect(ctx, creds, Options{})
	if err == nil || strings.Contains(err.Error(), "wrong-secret-value") {
		t.Errorf("a wrong secret: %v", err)
	}
}

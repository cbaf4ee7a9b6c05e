// Package nova is drainctl's Nova client: gophercloud v2 for what it covers, its raw
// ServiceClient for the server-migrations calls it lacks. It turns Nova's answers into model
// types and knows nothing of the screen.
package nova

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/utils/v2/openstack/clientconfig"

	"github.com/drainctl/drainctl/model"
)

// Credentials are resolved OpenStack credentials, ready for Keystone. Source says where
// they came from, for messages; nothing here is ever printed whole.
type Credentials struct {
	Auth      gophercloud.AuthOptions
	Region    string
	Interface gophercloud.Availability
	TLS       *tls.Config
	Source    string
	Cloud     string // the clouds.yaml entry, when the credentials came from one
}

// CredentialError is a configuration problem with the OpenStack credentials: exit code 2.
type CredentialError struct {
	Source  string
	Problem string
	Hint    string
}

func (e *CredentialError) Error() string {
	s := fmt.Sprintf("OpenStack credentials from %s: %s", e.Source, e.Problem)
	if e.Hint != "" {
		s += "; " + e.Hint
	}
	return s
}

// ResolveCredentials picks the credential source, first match wins: the legacy config.yaml
// (given explicitly), OS_CLOUD + clouds.yaml, OS_AUTH_URL + OS_*, the [openstack] table.
// It returns nil, nil when nothing is configured: drainctl then runs on Kubernetes alone.
func ResolveCredentials(legacy *model.OpenStackConfig, table model.OpenStackConfig, getenv func(string) string) (*Credentials, error) {
	switch {
	case legacy != nil:
		return fromTable(*legacy, "-config-path config.yaml", getenv)
	case getenv("OS_CLOUD") != "":
		return fromCloudsYAML(getenv("OS_CLOUD"), "OS_CLOUD="+getenv("OS_CLOUD")+" and clouds.yaml", getenv)
	case getenv("OS_AUTH_URL") != "":
		return fromTable(envTable(getenv), "OS_* environment variables", getenv)
	case table.Cloud != "":
		return fromCloudsYAML(table.Cloud, fmt.Sprintf("config.toml [openstack] cloud = %q", table.Cloud), getenv)
	case !table.IsZero():
		return fromTable(table, "config.toml [openstack]", getenv)
	}
	return nil, nil
}

func envTable(getenv func(string) string) model.OpenStackConfig {
	first := func(keys ...string) string {
		for _, k := range keys {
			if v := getenv(k); v != "" {
				return v
			}
		}
		return ""
	}
	insecure, _ := strconv.ParseBool(getenv("OS_INSECURE"))
	return model.OpenStackConfig{
		AuthURL:                     getenv("OS_AUTH_URL"),
		Region:                      first("OS_REGION_NAME", "OS_REGION"),
		Interface:                   first("OS_INTERFACE", "OS_ENDPOINT_TYPE"),
		Username:                    getenv("OS_USERNAME"),
		UserID:                      getenv("OS_USER_ID"),
		UserDomainName:              first("OS_USER_DOMAIN_NAME", "OS_DOMAIN_NAME"),
		UserDomainID:                first("OS_USER_DOMAIN_ID", "OS_DOMAIN_ID"),
		ProjectName:                 first("OS_PROJECT_NAME", "OS_TENANT_NAME"),
		ProjectID:                   first("OS_PROJECT_ID", "OS_TENANT_ID"),
		ProjectDomainName:           first("OS_PROJECT_DOMAIN_NAME", "OS_DOMAIN_NAME"),
		ProjectDomainID:             first("OS_PROJECT_DOMAIN_ID", "OS_DOMAIN_ID"),
		Password:                    model.Secret(getenv("OS_PASSWORD")),
		ApplicationCredentialID:     getenv("OS_APPLICATION_CREDENTIAL_ID"),
		ApplicationCredentialName:   getenv("OS_APPLICATION_CREDENTIAL_NAME"),
		ApplicationCredentialSecret: model.Secret(getenv("OS_APPLICATION_CREDENTIAL_SECRET")),
		CACert:                      getenv("OS_CACERT"),
		Insecure:                    insecure,
	}
}

func fromTable(t model.OpenStackConfig, source string, getenv func(string) string) (*Credentials, error) {
	bad := func(problem, hint string) (*Credentials, error) {
		return nil, &CredentialError{Source: source, Problem: problem, Hint: hint}
	}
	if t.AuthURL == "" {
		return bad("no auth_url", "set the Keystone URL (auth_url, OS_AUTH_URL)")
	}
	ao := gophercloud.AuthOptions{IdentityEndpoint: t.AuthURL, AllowReauth: true}
	appCred := t.ApplicationCredentialID != "" || t.ApplicationCredentialName != ""
	if appCred {
		secret, err := secretFrom(
			t.ApplicationCredentialSecret,
			t.ApplicationCredentialSecretFile,
			"OS_APPLICATION_CREDENTIAL_SECRET",
			getenv,
		)
		if err != nil {
			return bad(err.Error(), "")
		}
		if secret == "" {
			return bad("an application credential without its secret",
				"set application_credential_secret_file (or OS_APPLICATION_CREDENTIAL_SECRET)")
		}
		if t.ApplicationCredentialID == "" && t.Username == "" && t.UserID == "" {
			return bad(
				"an application credential name without its user",
				"set username (with its domain) or user_id, or use application_credential_id",
			)
		}
		ao.ApplicationCredentialID = t.ApplicationCredentialID
		ao.ApplicationCredentialName = t.ApplicationCredentialName
		ao.ApplicationCredentialSecret = secret
		ao.Username, ao.UserID = t.Username, t.UserID
		ao.DomainName, ao.DomainID = t.UserDomainName, t.UserDomainID
		if ao.Username != "" && ao.DomainName == "" && ao.DomainID == "" {
			ao.DomainName = "Default"
		}
	} else {
		if t.Username == "" && t.UserID == "" {
			return bad("no username", "set username (OS_USERNAME) or user_id, or an application credential")
		}
		pw, err := secretFrom(t.Password, t.PasswordFile, "OS_PASSWORD", getenv)
		if err != nil {
			return bad(err.Error(), "")
		}
		if pw == "" {
			return bad("no password", "set password_file, or OS_PASSWORD in the environment")
		}
		if t.ProjectName == "" && t.ProjectID == "" {
			return bad("no project to scope the token to",
				"set project_name (OS_PROJECT_NAME) or project_id; listing all hypervisors needs an admin project")
		}
		ao.Username, ao.UserID, ao.Password = t.Username, t.UserID, pw
		ao.DomainName, ao.DomainID = t.UserDomainName, t.UserDomainID
		if ao.UserID == "" && ao.DomainName == "" && ao.DomainID == "" {
			ao.DomainName = "Default"
		}
		scope := &gophercloud.AuthScope{ProjectName: t.ProjectName, ProjectID: t.ProjectID}
		if t.ProjectID == "" {
			scope.DomainName, scope.DomainID = t.ProjectDomainName, t.ProjectDomainID
			if scope.DomainName == "" && scope.DomainID == "" {
				scope.DomainName, scope.DomainID = ao.DomainName, ao.DomainID
			}
		}
		ao.Scope = scope
	}
	tlsCfg, err := tlsConfig(t.CACert, t.Insecure)
	if err != nil {
		return bad(err.Error(), "")
	}
	return &Credentials{Auth: ao, Region: t.Region, Interface: availability(t.Interface), TLS: tlsCfg, Source: source}, nil
}

func fromCloudsYAML(name, source string, getenv func(string) string) (*Credentials, error) {
	opts := &clientconfig.ClientOpts{Cloud: name}
	cloud, err := clientconfig.GetCloudFromYAML(opts)
	if err != nil {
		return nil, &CredentialError{Source: source, Problem: err.Error(),
			Hint: "clouds.yaml is searched in OS_CLIENT_CONFIG_FILE, ., ~/.config/openstack and /etc/openstack"}
	}
	ao, err := clientconfig.AuthOptions(opts)
	if err != nil {
		return nil, &CredentialError{Source: source, Problem: err.Error()}
	}
	ao.AllowReauth = true
	tlsCfg, err := clientconfig.PrepareTLSConfig("OS_", cloud)
	if err != nil {
		return nil, &CredentialError{Source: source, Problem: err.Error()}
	}
	region := cloud.RegionName
	if region == "" {
		region = getenv("OS_REGION_NAME")
	}
	iface := cloud.EndpointType
	if iface == "" {
		iface = cloud.Interface
	}
	return &Credentials{Auth: *ao, Region: region, Interface: availability(iface), TLS: tlsCfg, Source: source, Cloud: name}, nil
}

// secretFrom returns the inline secret, else the file's first line, else the variable.
func secretFrom(inline model.Secret, file, env string, getenv func(string) string) (string, error) {
	if inline != "" {
		return inline.Reveal(), nil
	}
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("cannot read secret file %s: %w", file, err)
		}
		return strings.TrimRight(strings.SplitN(string(b), "\n", 2)[0], "\r"), nil
	}
	return getenv(env), nil
}

func tlsConfig(cacert string, insecure bool) (*tls.Config, error) {
	if cacert == "" && !insecure {
		return nil, nil
	}
	cfg := &tls.Config{InsecureSkipVerify: insecure} //nolint:gosec // asked for by name
	if cacert != "" {
		pem, err := os.ReadFile(cacert)
		if err != nil {
			return nil, fmt.Errorf("cannot read cacert %s: %w", cacert, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("cacert %s holds no PEM certificate", cacert)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

func availability(s string) gophercloud.Availability {
	switch strings.TrimSuffix(strings.ToLower(s), "url") {
	case "internal":
		return gophercloud.AvailabilityInternal
	case "admin":
		return gophercloud.AvailabilityAdmin
	default:
		return gophercloud.AvailabilityPublic
	}
}

"""The real Nova's catalog and test world, for hack/nova.sh (Debian's /usr/bin/python3).

  catalog.py ENV                 service project, users (admin and service roles), the
                                 compute, placement, image and network services and endpoints
  catalog.py --ready ENV HOST..  exits 0 once every HOST is a mapped hypervisor whose
                                 nova-compute is up
  catalog.py --world ENV         the flavors and the image drainctl's tests boot with
  catalog.py --guest ENV DIR     the libvirt world's guest (DIR/vmlinuz, DIR/initrd.gz): its
                                 kernel, ramdisk and machine images, and its flavor

The control plane's address is the one OS_AUTH_URL names (127.0.0.1, or the libvirt world's).

Plain HTTP through urllib, one admin token: keystone's password auth costs a second of CPU.
"""
import json
import sys
import urllib.error
import urllib.request

ADDR = "127.0.0.1"  # set from the env file's OS_AUTH_URL
KEYSTONE = NOVA = GLANCE = ""
ENDPOINTS = {}


def at(addr):
    global ADDR, KEYSTONE, NOVA, GLANCE, ENDPOINTS
    ADDR = addr
    KEYSTONE = "http://%s:5000/v3" % addr
    NOVA = "http://%s:8774/v2.1" % addr
    GLANCE = "http://%s:9292" % addr
    ENDPOINTS = {
        "compute": ("nova", NOVA),
        "placement": ("placement", "http://%s:8778" % addr),
        "image": ("glance", GLANCE),
        "network": ("neutron", "http://%s:9696" % addr),
    }
# Flavors drainctl's tests use: small enough that the fake hosts take many.
FLAVORS = [("m1.tiny", 512, 1, 1), ("m1.small", 2048, 1, 20), ("m1.medium", 4096, 2, 40)]


def env(path):
    out = {}
    with open(path) as f:
        for line in f:
            k, _, v = line.strip().partition("=")
            if k:
                out[k] = v
    at(out["OS_AUTH_URL"].split("//", 1)[1].split(":", 1)[0])
    return out


def call(method, url, token=None, body=None, headers=None, raw=None):
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Content-Type", "application/octet-stream" if raw is not None else "application/json")
    if token:
        req.add_header("X-Auth-Token", token)
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            text = r.read()
            return r.status, (json.loads(text) if text and r.headers.get_content_type() == "application/json" else None), r.headers
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace"), e.headers


def token(e):
    body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": e["OS_USERNAME"], "password": e["OS_PASSWORD"], "domain": {"name": "Default"}}}},
        "scope": {"project": {"name": e["OS_PROJECT_NAME"], "domain": {"name": "Default"}}}}}
    st, _, h = call("POST", KEYSTONE + "/auth/tokens", body=body)
    if st != 201:
        sys.exit("catalog.py: keystone refused the admin's password: %s" % st)
    return h["X-Subject-Token"]


def must(st, body, what, ok=(200, 201, 202, 204)):
    if st not in ok:
        sys.exit("catalog.py: %s: %s %s" % (what, st, body))
    return body


def find(tok, kind, name):
    st, body, _ = call("GET", "%s/%s?name=%s" % (KEYSTONE, kind, name), tok)
    items = must(st, body, "listing " + kind)[kind]
    return items[0]["id"] if items else None


def catalog(e):
    tok = token(e)
    project = find(tok, "projects", "service") or must(*call("POST", KEYSTONE + "/projects", tok, {
        "project": {"name": "service", "domain_id": "default"}})[:2], "service project")["project"]["id"]
    roles = {}
    for r in ("admin", "service"):
        roles[r] = find(tok, "roles", r) or must(*call("POST", KEYSTONE + "/roles", tok, {
            "role": {"name": r}})[:2], "role " + r)["role"]["id"]
    # Nova passes its token to neutron as a service token: its users need both roles.
    for user in ("nova", "placement", "glance", "neutron"):
        uid = find(tok, "users", user) or must(*call("POST", KEYSTONE + "/users", tok, {
            "user": {"name": user, "password": e["OS_PASSWORD"], "domain_id": "default"}})[:2], "user " + user)["user"]["id"]
        for r in roles.values():
            must(*call("PUT", "%s/projects/%s/users/%s/roles/%s" % (KEYSTONE, project, uid, r), tok)[:2], "role for " + user)
    for kind, (name, url) in ENDPOINTS.items():
        sid = find(tok, "services", name) or must(*call("POST", KEYSTONE + "/services", tok, {
            "service": {"name": name, "type": kind}})[:2], "service " + name)["service"]["id"]
        for iface in ("public", "internal", "admin"):
            must(*call("POST", KEYSTONE + "/endpoints", tok, {"endpoint": {
                "service_id": sid, "interface": iface, "url": url, "region_id": "RegionOne"}})[:2], "endpoint " + name)


MV = {"OpenStack-API-Version": "compute 2.93", "X-OpenStack-Nova-API-Version": "2.93"}


def ready(e, hosts):
    tok = token(e)
    st, body, _ = call("GET", NOVA + "/os-hypervisors/detail", tok, headers=MV)
    got = {h["service"]["host"]: h["state"] for h in must(st, body, "hypervisors")["hypervisors"]}
    missing = [h for h in hosts if got.get(h) != "up"]
    if missing:
        sys.exit("not yet mapped and up: %s (seen %s)" % (missing, got))


def world(e):
    tok = token(e)
    for name, ram, vcpus, disk in FLAVORS:
        must(*call("POST", NOVA + "/flavors", tok, {"flavor": {
            "id": name, "name": name, "ram": ram, "vcpus": vcpus, "disk": disk}}, MV)[:2], "flavor " + name, ok=(200, 409))
    st, body, _ = call("GET", GLANCE + "/v2/images?name=cirros", tok)
    if must(st, body, "images")["images"]:
        return
    st, body, _ = call("POST", GLANCE + "/v2/images", tok, {
        "name": "cirros", "disk_format": "raw", "container_format": "bare", "visibility": "public"})
    image = must(st, body, "image")["id"]
    # The fake driver boots anything: a few bytes stand in for a disk.
    must(*call("PUT", GLANCE + "/v2/images/%s/file" % image, tok, raw=b"drainctl test image\n")[:2], "image data")


# The libvirt world's guest: 256 MiB of memory (the guest holds what its metadata says), a
# 1 GB root disk that stays almost empty.
GUEST_FLAVOR = ("g.guest", 256, 1, 1)
# All three images raw, not aki/ari/ami: Nova 26.2.2's format check (bug 2059809) refuses an
# AMI-family image that qemu-img calls raw ("Image content does not match disk_format") when a
# live migration's destination fetches the kernel; kernel_id and ramdisk_id work on any format.
RAW = {"disk_format": "raw", "container_format": "bare"}


def image(tok, name, fields, data):
    st, body, _ = call("GET", GLANCE + "/v2/images?name=" + name, tok)
    found = must(st, body, "images")["images"]
    if found:
        return found[0]["id"]
    fields = dict(fields, name=name, visibility="public")
    st, body, _ = call("POST", GLANCE + "/v2/images", tok, fields)
    iid = must(st, body, "image " + name)["id"]
    must(*call("PUT", GLANCE + "/v2/images/%s/file" % iid, tok, raw=data)[:2], "image data of " + name)
    return iid


def guest(e, d):
    tok = token(e)
    name, ram, vcpus, disk = GUEST_FLAVOR
    must(*call("POST", NOVA + "/flavors", tok, {"flavor": {
        "id": name, "name": name, "ram": ram, "vcpus": vcpus, "disk": disk}}, MV)[:2], "flavor " + name, ok=(200, 409))
    with open(d + "/vmlinuz", "rb") as f:
        kernel = image(tok, "guest-kernel", RAW, f.read())
    with open(d + "/initrd.gz", "rb") as f:
        ramdisk = image(tok, "guest-ramdisk", RAW, f.read())
    # The machine image: a blank disk; the kernel boots the ramdisk, whose /init is the guest.
    image(tok, "guest", dict(RAW, kernel_id=kernel, ramdisk_id=ramdisk,
                             os_command_line="console=ttyS0 panic=-1 quiet"), b"\0" * (1 << 20))


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[0] == "--ready":
        ready(env(args[1]), args[2:])
    elif args[0] == "--world":
        world(env(args[1]))
    elif args[0] == "--guest":
        guest(env(args[1]), args[2])
    else:
        catalog(env(args[0]))

// Package krb5kdc starts a real MIT Kerberos KDC (Debian's krb5-kdc) for a
// test: a fresh realm in a temporary directory, the KDC listening on a
// free loopback port (UDP and TCP), principals and keytabs made with
// kadmin.local, and tickets with kinit. The KDC stops when the test ends.
//
// Clients find it through the krb5.conf it writes (Conf): give it to Java
// as -Djava.security.krb5.conf and to MIT's library as KRB5_CONFIG (Env).
// The krb5.conf turns off DNS and reverse-DNS canonicalization, so a
// service principal is exactly service/<the host name the client dials>.
package krb5kdc

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// KDC is a running MIT KDC and its realm.
type KDC struct {
	// Realm is the realm's name.
	Realm string
	// Dir holds the database, configuration and logs.
	Dir string
	// Conf is the krb5.conf pointing at the KDC.
	Conf string
	// Port is the KDC's UDP and TCP port on 127.0.0.1.
	Port int
	t    testing.TB
	cmd  *exec.Cmd
}

// Binaries of Debian's krb5-kdc, krb5-admin-server and krb5-user.
const (
	krb5kdcBin  = "/usr/sbin/krb5kdc"
	kdb5UtilBin = "/usr/sbin/kdb5_util"
	kadminBin   = "/usr/sbin/kadmin.local"
	kinitBin    = "/usr/bin/kinit"
	klistBin    = "/usr/bin/klist"
)

// Start creates realm and starts its KDC. Tickets live at most maxLife
// (kinit -l asks for less). It fails the test when the packages are
// missing (scripts/setup-deps.sh installs them) or the KDC does not answer.
func Start(t testing.TB, realm string) *KDC {
	t.Helper()
	for _, b := range []string{krb5kdcBin, kdb5UtilBin, kadminBin, kinitBin} {
		if _, err := os.Stat(b); err != nil {
			t.Fatalf("krb5kdc: %s missing: run scripts/setup-deps.sh (krb5-kdc, krb5-admin-server, krb5-user)", b)
		}
	}
	k := &KDC{Realm: realm, Dir: t.TempDir(), t: t}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	k.Port = port
	k.Conf = filepath.Join(k.Dir, "krb5.conf")
	kdcConf := filepath.Join(k.Dir, "kdc.conf")
	files := map[string]string{
		k.Conf: fmt.Sprintf(`[libdefaults]
    default_realm = %[1]s
    dns_lookup_kdc = false
    dns_lookup_realm = false
    dns_canonicalize_hostname = false
    rdns = false
    udp_preference_limit = 1
    ticket_lifetime = 1h
    forwardable = false

[realms]
    %[1]s = {
        kdc = 127.0.0.1:%[2]d
    }
`, realm, port),
		kdcConf: fmt.Sprintf(`[kdcdefaults]
    kdc_listen = 127.0.0.1:%[2]d
    kdc_tcp_listen = 127.0.0.1:%[2]d

[realms]
    %[1]s = {
        database_name = %[3]s/principal
        key_stash_file = %[3]s/stash
        acl_file = %[3]s/kadm5.acl
        max_life = 1h
        supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
    }

[logging]
    kdc = FILE:%[3]s/kdc.log
`, realm, port, k.Dir),
		filepath.Join(k.Dir, "kadm5.acl"): "",
	}
	for p, text := range files {
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := k.run(kdb5UtilBin, "create", "-s", "-r", realm, "-P", "master-"+realm); err != nil {
		t.Fatalf("krb5kdc: kdb5_util create: %v\n%s", err, out)
	}
	k.cmd = exec.Command(krb5kdcBin, "-n", "-r", realm)
	k.cmd.Env = k.Env()
	k.cmd.Dir = k.Dir
	log, err := os.Create(filepath.Join(k.Dir, "krb5kdc.out"))
	if err != nil {
		t.Fatal(err)
	}
	k.cmd.Stdout, k.cmd.Stderr = log, log
	if err := k.cmd.Start(); err != nil {
		t.Fatalf("krb5kdc: start: %v", err)
	}
	t.Cleanup(k.stop)
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", k.Addr(), time.Second)
		if err == nil {
			c.Close()
			return k
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(log.Name())
			t.Fatalf("krb5kdc: no answer on %s after 20s: %v\n%s", k.Addr(), err, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Addr is the KDC's address.
func (k *KDC) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(k.Port)) }

// Env is the environment for MIT tools and libraries (kinit, Kazoo's
// python3-kerberos) to use this realm: KRB5_CONFIG and KRB5_KDC_PROFILE,
// with the rest of the process's environment.
func (k *KDC) Env() []string {
	return append(os.Environ(), "KRB5_CONFIG="+k.Conf, "KRB5_KDC_PROFILE="+filepath.Join(k.Dir, "kdc.conf"))
}

func (k *KDC) run(bin string, args ...string) ([]byte, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = k.Env()
	cmd.Dir = k.Dir
	return cmd.CombinedOutput()
}

// kadmin runs one kadmin.local query.
func (k *KDC) kadmin(query string) {
	k.t.Helper()
	out, err := k.run(kadminBin, "-r", k.Realm, "-q", query)
	if err != nil {
		k.t.Fatalf("krb5kdc: kadmin.local -q %q: %v\n%s", query, err, out)
	}
	// kadmin.local exits 0 on a failed query: its error lines start
	// with the command name.
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "add_principal:") || strings.HasPrefix(l, "ktadd:") || strings.HasPrefix(l, "ktremove:") ||
			strings.HasPrefix(l, "change_password:") || strings.HasPrefix(l, "modify_principal:") || strings.HasPrefix(l, "delete_principal:") {
			k.t.Fatalf("krb5kdc: kadmin.local -q %q: %s", query, l)
		}
	}
}

// AddPrincipal creates principal (name or name/host, in the realm) with
// random keys.
func (k *KDC) AddPrincipal(principal string) {
	k.t.Helper()
	k.kadmin("addprinc -randkey " + principal)
}

// Keytab writes the current keys of principals to a new keytab file in
// the KDC's directory and returns its path.
func (k *KDC) Keytab(name string, principals ...string) string {
	k.t.Helper()
	p := filepath.Join(k.Dir, name)
	for _, pr := range principals {
		k.kadmin("ktadd -k " + p + " -norandkey " + pr)
	}
	return p
}

// NewPrincipal creates principal with random keys and writes them to a
// keytab of its own in the KDC's directory, whose path it returns.
func (k *KDC) NewPrincipal(principal string) string {
	k.t.Helper()
	k.AddPrincipal(principal)
	return k.Keytab(fileName(principal)+".keytab", principal)
}

// RekeyedPrincipal creates principal, writes its keys to a keytab, gives
// it new keys and writes those to another: it returns the keytab of keys
// the KDC no longer takes (a keytab gone stale) and the current one.
func (k *KDC) RekeyedPrincipal(principal string) (old, current string) {
	k.t.Helper()
	old = k.NewPrincipal(principal)
	k.Rekey(principal)
	return old, k.Keytab(fileName(principal)+"-current.keytab", principal)
}

// DeletedPrincipal creates principal, writes its keytab and deletes it
// from the realm: the keytab's principal is one the KDC does not know.
func (k *KDC) DeletedPrincipal(principal string) string {
	k.t.Helper()
	kt := k.NewPrincipal(principal)
	k.Delete(principal)
	return kt
}

// ExpiredCache returns a credential cache holding a TGT of principal
// (from keytab) that has expired: kinit asks for 1s, then it waits until
// klist says so (at most 20s).
func (k *KDC) ExpiredCache(principal, keytab string) string {
	k.t.Helper()
	cache, err := k.Kinit(principal, keytab, time.Second)
	if err != nil {
		k.t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); !k.Expired(cache); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			k.t.Fatalf("krb5kdc: a 1s ticket of %s still valid after 20s", principal)
		}
	}
	return cache
}

// JAASSection is a JAAS section name whose Krb5LoginModule logs principal
// in from keytab (useKeyTab, storeKey, no ticket cache), with extra
// options (such as isInitiator=false) before the principal.
func JAASSection(name, principal, keytab, extra string) string {
	return name + ` {
    com.sun.security.auth.module.Krb5LoginModule required
    useKeyTab=true
    keyTab="` + keytab + `"
    storeKey=true
    useTicketCache=false
    ` + extra + `
    principal="` + principal + `";
};
`
}

// fileName makes a principal a file name.
func fileName(principal string) string {
	return strings.NewReplacer("/", "_", "@", "_").Replace(principal)
}

// Delete removes principal from the realm: its keytabs and tickets then
// belong to a principal the KDC does not know.
func (k *KDC) Delete(principal string) {
	k.t.Helper()
	k.kadmin("delprinc -force " + principal)
}

// Rekey gives principal new random keys: keytabs written before hold
// only its old keys (the "wrong keytab" of a principal rekeyed after the
// keytab was exported).
func (k *KDC) Rekey(principal string) {
	k.t.Helper()
	k.kadmin("cpw -randkey " + principal)
}

// Kinit gets principal a TGT from keytab into a new credential cache in
// the KDC's directory, valid for lifetime (0: the realm's maximum), and
// returns the cache's path (for KRB5CCNAME, or Java's ticketCache).
func (k *KDC) Kinit(principal, keytab string, lifetime time.Duration) (string, error) {
	cache := filepath.Join(k.Dir, "cc-"+fileName(principal)+"-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	args := []string{"-k", "-t", keytab, "-c", cache}
	if lifetime > 0 {
		args = append(args, "-l", strconv.Itoa(int(lifetime.Seconds()))+"s")
	}
	out, err := k.run(kinitBin, append(args, principal)...)
	if err != nil {
		return "", fmt.Errorf("kinit %s: %v: %s", principal, err, strings.TrimSpace(string(out)))
	}
	return cache, nil
}

// Expired reports whether the TGT in cache has expired (klist -s fails).
func (k *KDC) Expired(cache string) bool {
	_, err := k.run(klistBin, "-s", "-c", cache)
	return err != nil
}

// Log returns the KDC's log.
func (k *KDC) Log() string {
	b, _ := os.ReadFile(filepath.Join(k.Dir, "kdc.log"))
	return string(b)
}

// stop ends the KDC this test started.
func (k *KDC) stop() {
	if k.cmd == nil || k.cmd.Process == nil {
		return
	}
	_ = k.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- k.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = k.cmd.Process.Kill()
		<-done
	}
}

// freePort returns a port free on 127.0.0.1 for both TCP and UDP.
func freePort() (int, error) {
	for i := 0; i < 20; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		l.Close()
		if err == nil {
			u.Close()
			return port, nil
		}
	}
	return 0, errors.New("krb5kdc: no port free for both TCP and UDP on 127.0.0.1")
}

package main

import (
	"fmt"
	"strings"
)

// keyStatus is what zkd does with a zoo.cfg key: the status column of
// docs/zoo-cfg.md.
type keyStatus string

const (
	// honoured keys change what zkd does, as in ZooKeeper 3.8.
	honoured keyStatus = "honoured"
	// refused keys stop zkd at start when set (to anything but the value
	// that asks for nothing), naming the key: a protection zkd does not
	// implement must never look enabled.
	refused keyStatus = "refused"
	// noEffect keys are accepted and logged at start, and change nothing.
	noEffect keyStatus = "no effect"
)

// zooCfgKey is one key zkd reads from zoo.cfg, as written there. A key
// ending in ".N" stands for every key with that prefix (server.1,
// authProvider.x509).
type zooCfgKey struct {
	key    string
	status keyStatus
}

// sslKeys are the keys tlsconf.FromProps reads under ssl. (the client
// port) and ssl.quorum. (members and admin HTTPS), with their status.
var sslKeys = []zooCfgKey{
	{"keyStore.location", honoured}, {"keyStore.password", honoured},
	{"keyStore.passwordPath", honoured}, {"keyStore.type", honoured},
	{"trustStore.location", honoured}, {"trustStore.password", honoured},
	{"trustStore.passwordPath", honoured}, {"trustStore.type", honoured},
	{"clientAuth", honoured}, {"protocol", honoured}, {"enabledProtocols", honoured},
	{"ciphersuites", honoured}, {"hostnameVerification", honoured},
	{"authProvider", honoured}, // x509 only; any other value is refused
	{"crl", refused}, {"ocsp", refused}, {"context.supplier.class", refused},
}

// zooCfgKeys is every key zkd reads from zoo.cfg: zooCfg.set's own and the
// system properties the rest of cmd/zkd looks up (zooCfg.prop), named
// without their "zookeeper." prefix. docs/zoo-cfg.md has one row for
// each, and TestZooCfgKeysDocumented keeps the two in step.
var zooCfgKeys = func() []zooCfgKey {
	keys := []zooCfgKey{
		// Parsed by zooCfg.set.
		{"tickTime", honoured}, {"initLimit", honoured}, {"syncLimit", honoured},
		{"dataDir", honoured}, {"dataLogDir", honoured},
		{"clientPort", honoured}, {"clientPortAddress", honoured},
		{"secureClientPort", honoured}, {"secureClientPortAddress", honoured},
		{"maxClientCnxns", honoured},
		{"minSessionTimeout", honoured}, {"maxSessionTimeout", honoured},
		{"4lw.commands.whitelist", honoured},
		{"admin.enableServer", honoured}, {"admin.serverPort", honoured}, {"admin.serverAddress", honoured},
		{"metricsProvider.className", honoured}, {"metricsProvider.httpPort", honoured},
		{"metricsProvider.httpHost", honoured},
		{"snapCount", honoured}, {"autopurge.snapRetainCount", honoured},
		{"reconfigEnabled", honoured}, {"portUnification", honoured},
		{"server.N", honoured},
		{"zkd.bootstrap", honoured}, {"zkd.lockDelayMs", honoured},
		{"standaloneEnabled", noEffect},
		{"autopurge.purgeInterval", noEffect}, {"metricsProvider.exportJvmInfo", noEffect},
		{"dynamicConfigFile", noEffect}, {"localSessionsEnabled", noEffect},
		{"localSessionsUpgradingEnabled", noEffect}, {"preAllocSize", noEffect},
		{"peerType", noEffect}, {"electionAlg", noEffect},
		{"quorumListenOnAllIPs", noEffect}, {"forceSync", noEffect},
		{"group.N", noEffect}, {"weight.N", noEffect},
		{"sslQuorumReloadCertFiles", noEffect},

		// System properties (zooCfg.prop).
		{"jute.maxbuffer", honoured}, {"readonlymode.enabled", honoured},
		{"extendedTypesEnabled", honoured}, {"enforceQuota", honoured}, {"digest.enabled", honoured},
		{"znode.container.checkIntervalMs", honoured}, {"znode.container.maxPerMinute", honoured},
		{"zkd.log.level", honoured}, {"zkd.log.format", honoured}, {"zkd.log.dir", honoured},
		{"zkd.log.maxFileSize", honoured}, {"zkd.log.maxBackupIndex", honoured},
		{"zkd.slowRequestMs", honoured},
		{"zkd.console.enabled", honoured}, {"zkd.console.identity", honoured},
		{"zkd.console.sampleIntervalMs", honoured},
		{"maxCnxns", honoured}, {"globalOutstandingLimit", honoured},
		{"request_throttle_max_requests", honoured}, {"request_throttle_stall_time", honoured},
		{"request_throttle_drop_stale", honoured}, {"throttled_op_wait_time", honoured},
		{"connection_throttle_tokens", honoured}, {"connection_throttle_fill_time", honoured},
		{"connection_throttle_fill_count", honoured}, {"connection_throttle_freeze_time", honoured},
		{"connection_throttle_drop_increase", honoured}, {"connection_throttle_drop_decrease", honoured},
		{"connection_throttle_decrease_ratio", honoured}, {"connection_throttle_weight_enabled", honoured},
		{"connection_throttle_global_session_weight", honoured},
		{"connection_throttle_local_session_weight", honoured},
		{"connection_throttle_renew_session_weight", honoured},
		{"DigestAuthenticationProvider.superDigest", honoured},
		{"X509AuthenticationProvider.superUser", honoured},
		{"authProvider.N", honoured}, {"superUser", honoured},
		{"SASLAuthenticationProvider.superPassword", honoured}, {"sasl.serverconfig", honoured},
		{"allowSaslFailedClients", honoured}, {"sessionRequireClientSASLAuth", honoured},
		{"kerberos.removeHostFromPrincipal", honoured}, {"kerberos.removeRealmFromPrincipal", honoured},
		{"security.auth_to_local", honoured},
		{"enforce.auth.enabled", honoured}, {"enforce.auth.schemes", honoured},
		{"nio.sessionlessCnxnTimeout", honoured}, {"client.portUnification", honoured},
		{"sslQuorum", honoured}, {"admin.forceHttps", honoured}, {"admin.portUnification", honoured},
		{"serverCnxnFactory", noEffect},
		{"admin.needClientAuth", honoured}, {"letAnySaslUserDoX", refused},
		{"quorum.auth.enableSasl", honoured}, {"quorum.auth.learnerRequireSasl", honoured},
		{"quorum.auth.serverRequireSasl", honoured},
		{"quorum.auth.learner.saslLoginContext", honoured}, {"quorum.auth.server.saslLoginContext", honoured},
		{"quorum.auth.kerberos.servicePrincipal", honoured},
	}
	for _, prefix := range []string{"ssl.", "ssl.quorum."} {
		for _, k := range sslKeys {
			keys = append(keys, zooCfgKey{prefix + k.key, k.status})
		}
	}
	return keys
}()

// keyStatusOf returns what zkd does with a zoo.cfg key, and false for a
// key it does not read.
func keyStatusOf(key string) (keyStatus, bool) {
	for _, k := range zooCfgKeys {
		if k.key == key {
			return k.status, true
		}
		if prefix, ok := strings.CutSuffix(k.key, ".N"); ok && strings.HasPrefix(key, prefix+".") && len(key) > len(prefix)+1 {
			return k.status, true
		}
	}
	return "", false
}

// closestKey returns the known key nearest to key in edit distance,
// ignoring case, and whether it is near enough to suggest: at most a third
// of key's length, and no more than 3 edits. A known key written with the
// "zookeeper." prefix of its system property is its own suggestion.
func closestKey(key string) (string, bool) {
	// A system property's full name written as a zoo.cfg key.
	if rest, ok := strings.CutPrefix(key, "zookeeper."); ok {
		if _, known := keyStatusOf(rest); known {
			return rest, true
		}
	}
	best, bestD := "", -1
	lower := strings.ToLower(key)
	for _, k := range zooCfgKeys {
		d := editDistance(lower, strings.ToLower(k.key))
		if bestD < 0 || d < bestD {
			best, bestD = k.key, d
		}
	}
	return best, bestD <= min(3, max(1, len(key)/3))
}

// unknownKeyMessage is the warning zkd logs at start for a zoo.cfg key it
// does not read, naming the closest key it does.
func unknownKeyMessage(key string) string {
	if k, ok := closestKey(key); ok {
		return fmt.Sprintf("%s: unknown key; did you mean %s?", key, k)
	}
	return fmt.Sprintf("%s: unknown key; zkd does not read it", key)
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

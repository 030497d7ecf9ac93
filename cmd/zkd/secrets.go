package main

import "strings"

// redacted replaces the value of a secret property in admin output.
const redacted = "******"

// secretProp reports whether a system property holds a secret (a password,
// ZooKeeper's superDigest, a SASL super password) that admin and 4lw
// output must not show: unlike ZooKeeper, which prints them to anyone who
// reaches the admin port.
func secretProp(name string) bool {
	n := strings.ToLower(name)
	return strings.Contains(n, "password") || strings.Contains(n, "passwd") ||
		strings.Contains(n, "superdigest") || strings.Contains(n, "secret") ||
		strings.HasSuffix(n, "console.identity") // digest:user:password
}

// systemProperties is the admin command system_properties: every property
// zoo.cfg and -D flags set, secrets redacted.
func systemProperties(c *zooCfg) map[string]any {
	m := make(map[string]any, len(c.Props))
	for _, k := range c.propNames() {
		v := c.Props[k]
		if secretProp(k) {
			v = redacted
		}
		m[k] = v
	}
	return m
}

package sasl

// Users holds the DIGEST-MD5 credentials of a JAAS Server section: the
// user_<name>="<password>" options of its DigestLoginModule, and the
// super user's password from zookeeper.SASLAuthenticationProvider.superPassword.
type Users struct {
	// Passwords maps user names to passwords.
	Passwords map[string]string
	// SuperPassword, when set, is the password of user "super", taking
	// precedence over a user_super option (SaslServerCallbackHandler).
	SuperPassword string
}

// password returns name's password.
func (u Users) password(name string) (string, bool) {
	if name == "super" && u.SuperPassword != "" {
		return u.SuperPassword, true
	}
	p, ok := u.Passwords[name]
	return p, ok
}

// Len is the number of users, super included.
func (u Users) Len() int {
	n := len(u.Passwords)
	if _, ok := u.Passwords["super"]; !ok && u.SuperPassword != "" {
		n++
	}
	return n
}

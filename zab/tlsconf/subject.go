package tlsconf

import (
	"crypto/x509"
	"encoding/asn1"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf16"
)

// atv and rdnSET mirror the DER of a distinguished name, keeping each
// value's raw encoding (pkix.Name loses its tag, which the hex form needs).
type atv struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// rdnSET is one relative distinguished name; the SET suffix makes
// encoding/asn1 read it as a SET OF.
type rdnSET []atv

// rfc2253Keywords are the attribute names Java's X500Principal.getName()
// (RFC 2253 format) prints; every other attribute is printed as its OID.
var rfc2253Keywords = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"2.5.4.9":                    "STREET",
	"0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.1":  "UID",
}

// SubjectName returns cert's subject as Java's
// X500Principal.getName() does (RFC 2253): the most specific RDN first,
// comma separated, known keywords with their string values escaped, other
// attributes as OID=#hex of the value's DER. ZooKeeper's
// X509AuthenticationProvider uses this string as the x509 identity.
func SubjectName(cert *x509.Certificate) (string, error) {
	var seq []rdnSET
	rest, err := asn1.Unmarshal(cert.RawSubject, &seq)
	if err != nil {
		return "", fmt.Errorf("tlsconf: certificate subject: %w", err)
	}
	if len(rest) > 0 {
		return "", fmt.Errorf("tlsconf: certificate subject: trailing data")
	}
	var b strings.Builder
	for i := len(seq) - 1; i >= 0; i-- {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		for j, a := range seq[i] {
			if j > 0 {
				b.WriteByte('+')
			}
			writeATV(&b, a)
		}
	}
	return b.String(), nil
}

// writeATV writes one type=value pair.
func writeATV(b *strings.Builder, a atv) {
	kw, known := rfc2253Keywords[a.Type.String()]
	s, isString := directoryString(a.Value)
	if !known || !isString {
		b.WriteString(a.Type.String())
		b.WriteString("=#")
		b.WriteString(hex.EncodeToString(a.Value.FullBytes))
		return
	}
	b.WriteString(kw)
	b.WriteByte('=')
	b.WriteString(escapeValue(s))
}

// directoryString decodes the string ASN.1 types a name value may have.
func directoryString(v asn1.RawValue) (string, bool) {
	if v.Class != asn1.ClassUniversal {
		return "", false
	}
	switch v.Tag {
	case asn1.TagUTF8String, asn1.TagPrintableString, asn1.TagIA5String, asn1.TagT61String:
		return string(v.Bytes), true
	case asn1.TagBMPString:
		if len(v.Bytes)%2 != 0 {
			return "", false
		}
		u := make([]uint16, len(v.Bytes)/2)
		for i := range u {
			u[i] = uint16(v.Bytes[2*i])<<8 | uint16(v.Bytes[2*i+1])
		}
		return string(utf16.Decode(u)), true
	}
	return "", false
}

// escapeValue escapes a value as Java's RFC 2253 output does: a backslash
// before , = + < > # ; " and \ anywhere, and before a leading or trailing
// space.
func escapeValue(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case strings.ContainsRune(`,=+<>#;"\`, r):
			b.WriteByte('\\')
		case r == ' ' && (i == 0 || i == len(s)-1):
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd/zkd/zab/tlsconf"
)

// tlsFlags are -tls-ca, -tls-cert and -tls-key: PEM files of the CA that
// signed the server's certificate and of the client's own certificate and
// key (both or neither). The CA file is read as zkd reads a PEM trust store
// (tlsconf.LoadTrustStore).
type tlsFlags struct {
	ca, cert, key string
}

// dialer returns how sessions connect: plain TCP without -tls-ca, else TLS
// trusting the CA, presenting the client certificate if one is given and
// checking the server's certificate against the host it dials.
func (f tlsFlags) dialer() (zk.Dialer, error) {
	plain := func(network, addr string, timeout time.Duration) (net.Conn, error) {
		return net.DialTimeout(network, addr, timeout)
	}
	if f.ca == "" {
		if f.cert != "" || f.key != "" {
			return nil, errors.New("zkbench: -tls-cert and -tls-key need -tls-ca")
		}
		return plain, nil
	}
	roots, err := tlsconf.LoadTrustStore(f.ca, "", tlsconf.TypePEM)
	if err != nil {
		return nil, fmt.Errorf("zkbench: -tls-ca: %w", err)
	}
	conf := &tls.Config{RootCAs: roots}
	if (f.cert == "") != (f.key == "") {
		return nil, errors.New("zkbench: give both -tls-cert and -tls-key, or neither")
	}
	if f.cert != "" {
		c, err := tls.LoadX509KeyPair(f.cert, f.key)
		if err != nil {
			return nil, fmt.Errorf("zkbench: -tls-cert/-tls-key: %w", err)
		}
		conf.Certificates = []tls.Certificate{c}
	}
	return func(network, addr string, timeout time.Duration) (net.Conn, error) {
		c := conf.Clone()
		c.ServerName, _, _ = net.SplitHostPort(addr)
		return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, network, addr, c)
	}, nil
}

// dialer is how this run connects: the -tls-* dialer parseArgs built, or
// plain TCP for a config made without parseArgs.
func (c config) dialer() zk.Dialer {
	if c.dial != nil {
		return c.dial
	}
	return net.DialTimeout
}

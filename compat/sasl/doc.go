// Package sasl tests SASL DIGEST-MD5 authentication, the sasl ACL scheme
// and enforce.auth against real zkd processes and, with the same zoo.cfg
// and JAAS file, against ZooKeeper 3.8 (compat/zkproc). The client speaks
// the wire protocol through compat/zkwire and server/sasl's DIGEST-MD5
// client, since go-zookeeper has no SASL support.
package sasl

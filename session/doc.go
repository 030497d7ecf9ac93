// Package session implements ZooKeeper's session bookkeeping without the
// tree or sockets: session ids and passwords generated exactly as
// ZooKeeper 3.8 does (so clients and tools see familiar values), timeout
// negotiation, and a Tracker that keeps session deadlines in tick-aligned
// expiry buckets like ZooKeeper's ExpiryQueue, so that the leader checks
// expiry once per tick and decides which sessions expired.
//
// # Layers
//
// zkd's packages depend one way, cmd → {server, quorum} → zab →
// {datatree, session} → jute; cmd/internal/layers checks it.
// session imports no other zkd package, and not datatree, its
// sibling.
package session

// Package console is zkd's web console, served under /console on the
// admin HTTP server (admin.serverPort, with its address, HTTPS and
// admin.enableServer settings). Its pages show the ensemble, the znode
// tree, the sessions connected to this member, the lock view with its
// fencing numbers, and plots of the last 15 minutes of a few metrics.
//
// The console is read-only: every handler answers GET (and HEAD) only,
// and nothing it calls writes. What it shows is limited as a client of
// the console's identity would be limited on the client port: a znode's
// data and ACL appear only when that identity passes the same ACL check
// the server makes for getData and getACL (datatree.Tree.GetData and
// GetACL). With no identity configured it shows structure (names, Stats,
// counts) and no data. The hash part of digest ids is always hidden, and
// no password, key or SASL secret is ever part of an answer.
//
// Every asset (HTML, CSS, JavaScript) is embedded in the binary; pages
// load nothing from the network but this member's JSON API under
// /console/api/. The API pages its answers with server-side limits, so a
// directory of 100k children or 10k sessions never travels whole.
package console

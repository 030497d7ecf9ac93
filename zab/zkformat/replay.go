package zkformat

import (
	"fmt"

	"github.com/zkd/zkd/datatree"
	"github.com/zkd/zkd/jute"
)

// superTxn is a datatree transaction that passes every ACL check:
// ZooKeeper validated the transaction before logging it.
func superTxn(tx *Txn) *datatree.Txn {
	return &datatree.Txn{Zxid: tx.Zxid, Time: tx.Time, SessionID: tx.ClientID, Auth: []jute.Id{datatree.SuperID}}
}

// createOp is the datatree create a ZooKeeper create transaction made:
// the path already carries its sequence suffix.
func createOp(tx *Txn) datatree.CreateOp {
	op := datatree.CreateOp{Path: tx.Path, Data: tx.Data, ACL: tx.ACL, Mode: jute.ModePersistent, Type: jute.OpCreate}
	switch tx.Type {
	case jute.OpCreateContainer:
		op.Mode, op.Type = jute.ModeContainer, jute.OpCreateContainer
	case jute.OpCreateTTL:
		op.Mode, op.Type, op.TTL = jute.ModePersistentWithTTL, jute.OpCreateTTL, tx.TTL
	default:
		if tx.Ephemeral {
			op.Mode = jute.ModeEphemeral
		}
	}
	return op
}

// ApplyTo applies tx, a transaction ZooKeeper committed, to a zkd tree
// through the tree's write API (so its watches fire), as the same
// transaction applies to this package's Tree. The tree must hold the
// state tx was committed on: any write the tree refuses means it does not,
// and is returned as an error naming the zxid and path.
func (tx *Txn) ApplyTo(t *datatree.Tree) error {
	var err error
	dtx := superTxn(tx)
	switch tx.Type {
	case jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL:
		_, _, err = t.Create(dtx, createOp(tx))
	case jute.OpDelete, jute.OpDeleteContainer:
		err = t.Delete(dtx, tx.Path, -1)
	case jute.OpSetData:
		_, err = t.SetData(dtx, tx.Path, tx.Data, -1)
	case jute.OpReconfig:
		_, err = t.SetConfigData(dtx, tx.Data, false)
	case jute.OpSetACL:
		_, err = t.SetACL(dtx, tx.Path, tx.ACL, -1)
	case jute.OpCloseSession:
		t.CloseSession(dtx, tx.ClientID)
	case jute.OpMulti:
		ops := make([]datatree.Op, 0, len(tx.Sub))
		for i := range tx.Sub {
			sub := &tx.Sub[i]
			switch sub.Type {
			case jute.OpError:
				// A failed multi applied nothing.
				t.NoteZxid(max(t.LastZxid(), tx.Zxid))
				return nil
			case jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL:
				ops = append(ops, datatree.Op{Type: jute.OpCreate, Create: createOp(sub)})
			case jute.OpDelete, jute.OpDeleteContainer:
				ops = append(ops, datatree.Op{Type: jute.OpDelete, Path: sub.Path, Version: -1})
			case jute.OpSetData:
				ops = append(ops, datatree.Op{Type: jute.OpSetData, Path: sub.Path, Data: sub.Data, Version: -1})
			case jute.OpCheck:
				ops = append(ops, datatree.Op{Type: jute.OpCheck, Path: sub.Path, Version: -1})
			default:
				return fmt.Errorf("zkformat: zxid 0x%x: multi op of type %d", tx.Zxid, sub.Type)
			}
		}
		if res, failed := t.Multi(dtx, ops); failed {
			for i, r := range res {
				if r.Err != nil {
					return fmt.Errorf("zkformat: zxid 0x%x: multi op %d: %w", tx.Zxid, i, r.Err)
				}
			}
		}
	default:
		// createSession, error and anything else that leaves the tree
		// alone still moves the zxid.
		t.NoteZxid(max(t.LastZxid(), tx.Zxid))
	}
	if err != nil {
		return fmt.Errorf("zkformat: zxid 0x%x (type %d) on %s: %w", tx.Zxid, tx.Type, tx.Path, err)
	}
	return nil
}

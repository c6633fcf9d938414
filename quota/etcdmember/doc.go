// Package etcdmember runs an embedded etcd member in the process: the
// zero-setup coordinator's single member, or one member of a cluster in
// a process of its own (afloat quota etcd). The member listens on
// loopback unless told otherwise, checks its data directory before etcd
// opens it (ErrDataDirDamaged names what it found; ErrDataDirInUse, a
// directory another process holds), and stops with its context.
//
//	m, err := etcdmember.StartMember(ctx, etcdmember.MemberConfig{DataDir: dir})
//	defer m.Close()
//	endpoints := []string{m.ClientURL}
//
// The embedded server is built only with the build tag embedetcd
// (EmbeddedEtcd says whether it was); without it StartMember and
// RunMember return ErrNoEmbeddedEtcd, and the quota needs an etcd cluster.
package etcdmember

/** The cluster's series on `/metrics`. */
import { Counter, Gauge, type Registry } from 'prom-client';

export interface ClusterGauges {
  ownedCount(): number;
  liveInstances(): number;
  healthy(): boolean;
}

export interface ClusterCounters {
  takeovers: Counter;
  acquired: Counter;
}

export function clusterMetrics(registry: Registry, read: ClusterGauges): ClusterCounters {
  const registers = [registry];
  new Gauge({
    name: 'chorus_cluster_owned_groups',
    help: 'Groups this instance runs now (holds the lease of).',
    registers,
    collect() {
      this.set(read.ownedCount());
    },
  });
  new Gauge({
    name: 'chorus_cluster_live_instances',
    help: 'Instances with a fresh heartbeat on the shared database, this one included.',
    registers,
    collect() {
      this.set(read.liveInstances());
    },
  });
  new Gauge({
    name: 'chorus_cluster_lease_healthy',
    help: '1 while this instance renews its leases, 0 when it cannot (it then runs no group).',
    registers,
    collect() {
      this.set(read.healthy() ? 1 : 0);
    },
  });
  const takeovers = new Counter({ name: 'chorus_cluster_lease_takeovers_total', help: 'Group leases taken from another instance whose lease had expired (it died or stalled).', registers });
  const acquired = new Counter({ name: 'chorus_cluster_leases_acquired_total', help: 'Group leases this instance took (new groups, free groups, takeovers).', registers });
  takeovers.inc(0);
  acquired.inc(0);
  return { takeovers, acquired };
}

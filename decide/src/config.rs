//! The controllers' configuration: their timing, the install's identity and the switches the
//! chart sets. The decisions read it (requeues, the capacity threshold, the default image),
//! so it lives with them; the reconciler builds it from its environment.

use std::time::Duration;

use crate::cluster::capacity::DEFAULT_LOW_PERCENT;
use crate::desired::network_policy::AdminCallers;
use crate::ownership::Install;

/// Timing of the controllers.
#[derive(Debug, Clone)]
pub struct Config {
    /// Resync of a converged object.
    pub resync: Duration,
    /// Resync of a converged GarageBucket or GarageKey: the check for drift made in Garage
    /// behind the operator's back. Longer than [`Config::resync`] because an install holds
    /// thousands of them and each check asks Garage.
    pub drift_resync: Duration,
    /// Requeue while something is still converging.
    pub short_requeue: Duration,
    /// Requeue while the only thing going on is a recorded drain waiting on Garage. Each look
    /// asks every member, so a shorter `short_requeue` (a test's) does not poll a drain faster.
    pub drain_requeue: Duration,
    /// Requeue after an error.
    pub error_requeue: Duration,
    /// Deadline of one Admin API call to a pod.
    pub admin_timeout: Duration,
    /// Garage image for clusters that name none (the install's `defaultGarageImage`).
    pub default_garage_image: Option<String>,
    /// Namespaces whose objects are reconciled; empty means every namespace.
    pub namespaces: Vec<String>,
    /// How long a drain proof must see no block error, no resync queue and no change before
    /// it completes. Garage resyncs delayed blocks after 10 minutes; the default covers that
    /// plus one requeue.
    pub drain_quiet: Duration,
    /// Longest one pass may run. A pass that has not finished by then is stopped (as a crash
    /// would stop it: every pass resumes from what it recorded) and tried again, so that one
    /// request that never returns cannot hold its object, and a controller slot, forever.
    pub pass_timeout: Duration,
    /// A storage member whose data or metadata partition has less than this percentage free
    /// is reported (`StorageCapacityLow`) and holds new drains and new storage rollouts: both
    /// move data or take a replica away while the disks have little room left. 0 turns the
    /// check off.
    pub storage_capacity_low_percent: u8,
    /// This install's identity, recorded on the GarageClusters it manages; a cluster that
    /// names another install is left alone ([`crate::ownership`]).
    pub install: Install,
    /// The NetworkPolicy over each cluster's Garage pods (chart value
    /// `garageNetworkPolicy.enabled`): who besides the cluster may reach its Admin API. `None`
    /// turns it off, and a policy a cluster controls is then deleted.
    pub garage_network_policy: Option<AdminCallers>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            resync: Duration::from_secs(60),
            drift_resync: Duration::from_secs(300),
            short_requeue: Duration::from_secs(5),
            drain_requeue: Duration::from_secs(5),
            error_requeue: Duration::from_secs(30),
            admin_timeout: Duration::from_secs(5),
            default_garage_image: None,
            namespaces: Vec::new(),
            drain_quiet: Duration::from_secs(670),
            pass_timeout: Duration::from_secs(300),
            storage_capacity_low_percent: DEFAULT_LOW_PERCENT,
            install: Install::default(),
            garage_network_policy: None,
        }
    }
}

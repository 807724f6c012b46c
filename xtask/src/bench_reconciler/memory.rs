//! The memory step of `cargo xtask bench reconciler`: a fresh reconciler's resident memory as
//! clusters are added up to each count, and what it settles to.

use super::*;

impl Bench {
    pub(super) async fn memory_levels(&self) -> Result<Vec<Level>> {
        let real = self.opts.real;
        println!(
            "\nmemory: a fresh garage-reconciler; clusters are added up to each count (all new ones \
             created at once; clusters rss-1..rss-{real} run real garage, later ones placeholder \
             pods), then, once the real ones are Ready and every placeholder pod runs (or the wait \
             times out), VmRSS is sampled every second for {} s and VmHWM read at the end",
            self.opts.settle.as_secs()
        );
        let mut reconciler = self
            .start_reconciler("garage-reconciler-memory.log")
            .await?;
        let clusters: Api<GarageCluster> = Api::namespaced(self.client.clone(), NS);
        let mut levels = Vec::new();
        let mut created = 0;
        for &count in &self.opts.levels {
            let began = Instant::now();
            for i in created + 1..=count {
                clusters
                    .create(
                        &PostParams::default(),
                        &manifest(&format!("rss-{i}"), i > real)?,
                    )
                    .await
                    .with_context(|| format!("creating GarageCluster {NS}/rss-{i}"))?;
            }
            let added = count - created;
            created = count;
            // Generous: on two shared cores, every new cluster starts three processes.
            let timeout = Duration::from_secs(300 + 15 * added as u64);
            let settled = self.wait_settled(count, timeout, &mut reconciler).await?;
            println!(
                "  {count} cluster(s): {} after creating {added} ({:.1} s)",
                if settled { "settled" } else { "NOT settled" },
                secs(began.elapsed())
            );
            let state = self.describe(count).await?;
            levels.push(
                self.sample(&mut reconciler, &format!("{count} cluster(s)"), state)
                    .await?,
            );
            if count <= real {
                let (processes, mib) = process::processes_of(&self.garage, &self.sim_dir);
                if processes > 0 && count > 0 {
                    println!(
                        "    garage memory per real cluster here: {:.0} MiB ({processes} processes, \
                         {mib:.0} MiB); {} real clusters would need about {:.1} GiB",
                        mib / count as f64,
                        self.opts.levels.last().copied().unwrap_or(count),
                        mib / count as f64
                            * self.opts.levels.last().copied().unwrap_or(count) as f64
                            / 1024.0
                    );
                }
            }
        }
        if let Some(&count) = self.opts.levels.last() {
            println!(
                "\n  restart with {count} cluster(s) present: the reconciler is killed, its Lease \
                 deleted, and a fresh one started (a failover's cold start)"
            );
            self.stop_reconciler(reconciler).await?;
            let mut fresh = self
                .start_reconciler("garage-reconciler-restart.log")
                .await?;
            self.wait_settled(count, Duration::from_secs(120), &mut fresh)
                .await?;
            let state = self.describe(count).await?;
            levels.push(
                self.sample(&mut fresh, &format!("restart, {count} cluster(s)"), state)
                    .await?,
            );
        }
        Ok(levels)
    }

    /// Waits until the real clusters among the first `count` are Ready and every placeholder
    /// pod runs; false on timeout.
    pub(super) async fn wait_settled(
        &self,
        count: usize,
        timeout: Duration,
        reconciler: &mut Reconciler,
    ) -> Result<bool> {
        let clusters: Api<GarageCluster> = Api::namespaced(self.client.clone(), NS);
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), NS);
        let real = self.opts.real.min(count);
        let deadline = Instant::now() + timeout;
        loop {
            reconciler.check_alive()?;
            let ready = clusters
                .list(&ListParams::default())
                .await?
                .items
                .iter()
                .filter(|c| c.name_any().starts_with("rss-") && timeline::is_ready(c))
                .count();
            let placeholders_running = pods
                .list(&ListParams::default())
                .await?
                .items
                .iter()
                .filter(|p| {
                    p.spec.as_ref().is_some_and(|s| {
                        s.containers
                            .iter()
                            .any(|c| c.image.as_deref() == Some(PLACEHOLDER_IMAGE))
                    }) && p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
                })
                .count();
            if ready >= real && placeholders_running >= (count - real) * MEMBERS {
                return Ok(true);
            }
            if Instant::now() > deadline {
                return Ok(false);
            }
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
    }

    /// Prints how many clusters stand in which Ready state, with one message of each, and
    /// returns the one-line summary.
    pub(super) async fn describe(&self, count: usize) -> Result<String> {
        let clusters: Api<GarageCluster> = Api::namespaced(self.client.clone(), NS);
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), NS);
        let mut states: std::collections::BTreeMap<String, (usize, String)> = Default::default();
        for c in clusters.list(&ListParams::default()).await?.items {
            let (key, message) = c
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .and_then(|cs| cs.iter().find(|x| x.type_ == "Ready"))
                .map(|x| {
                    (
                        format!("Ready={} {}", x.status, x.reason),
                        x.message.clone(),
                    )
                })
                .unwrap_or_else(|| ("no Ready condition".into(), String::new()));
            let entry = states.entry(key).or_insert((0, message));
            entry.0 += 1;
        }
        let running = pods
            .list(&ListParams::default())
            .await?
            .items
            .iter()
            .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
            .count();
        let summary = states
            .iter()
            .map(|(k, (n, _))| format!("{n} {k}"))
            .collect::<Vec<_>>()
            .join(", ");
        println!("    {count} clusters: {summary}; {running} pods Running");
        for (key, (_, message)) in &states {
            if !message.is_empty() {
                println!("      {key}: \"{message}\"");
            }
        }
        Ok(summary)
    }

    /// Samples VmRSS every second for the settle window and prints the level's figures.
    pub(super) async fn sample(
        &self,
        reconciler: &mut Reconciler,
        label: &str,
        state: String,
    ) -> Result<Level> {
        let pid = reconciler.pid();
        let before = reconciler.counters().await?;
        let mut rss = Vec::new();
        let end = Instant::now() + self.opts.settle;
        let mut trace = Vec::new();
        while Instant::now() < end {
            reconciler.check_alive()?;
            let now = process::memory(pid)?.1;
            // Every 10th sample is printed, so a drift within the window shows.
            if rss.len() % 10 == 0 {
                trace.push(format!("{}s {now:.1}", rss.len()));
            }
            rss.push(now);
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        let after = reconciler.counters().await?;
        let (hwm, last) = process::memory(pid)?;
        rss.sort_by(f64::total_cmp);
        let steady = rss.get(rss.len() / 2).copied().unwrap_or(last);
        let (garages, garage_mib) = process::processes_of(&self.garage, &self.sim_dir);
        println!(
            "  {label}: peak (VmHWM) {hwm:.1} MiB; steady VmRSS median {steady:.1} MiB \
             (min {:.1}, max {:.1}, last {last:.1}) over {} samples",
            rss.first().copied().unwrap_or(last),
            rss.last().copied().unwrap_or(last),
            rss.len()
        );
        println!("    VmRSS (MiB) in the window: {}", trace.join(", "));
        println!(
            "    during the window: {}; beside it {garages} garage processes ({garage_mib:.0} MiB \
             RSS in all), MemAvailable {:.0} MiB, load {}",
            before.since(&after),
            process::mem_available_mib()?,
            process::load_average()
        );
        Ok(Level {
            label: label.to_owned(),
            state,
            hwm,
            steady,
        })
    }
}

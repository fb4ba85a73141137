//! Which file of a load is read where, when the page reads on helper workers: the portable
//! bookkeeping of [`crate::worker::parse_pool`], tested natively. A job is a log to parse or an export
//! to read; this module only sees its place in the request and its work.
//!
//! Helpers take the job of most work first (the longest starts at once instead of finishing
//! last); the loading worker walks the request in order and adds each file to the session when
//! its turn comes, from a helper's bytes or loaded in place (a helper failed, or, when it may
//! steal, no helper has taken that file yet). When it may steal and its turn's file is still on
//! a helper, it loads the earliest waiting file ahead instead of idling. Whatever happened,
//! every file is added exactly once and in the request's order.

/// Below this much work in one load (bytes of logs, each export's bytes counted
/// [`EXPORT_WORK_PER_BYTE`] times), the page loads everything in the loading worker unless
/// asked otherwise: a helper's start (about 150 ms) and the result's trip back cost more than
/// they save (docs/PERFORMANCE.md, *In the page: parsing logs on several Web Workers*).
pub const MIN_WORK: u64 = 32_000_000;

/// How much slower a byte of export is to read than a byte of log to parse, at least: sql.js
/// reads 30–65 MB/s in a worker (cold to warm), the parser several hundred MB/s in wasm. Makes
/// a load's work comparable across kinds, and hands helpers the exports before logs of the same
/// size.
pub const EXPORT_WORK_PER_BYTE: u64 = 8;

/// The work of a file of `bytes`: a log's bytes, or an export's weighted.
pub fn work(bytes: u64, export: bool) -> u64 {
    if export {
        bytes.saturating_mul(EXPORT_WORK_PER_BYTE)
    } else {
        bytes
    }
}

/// At most this many helpers by default: the parser reads 100–400 MB/s in wasm, so more rarely
/// pay for their memory (each helper is a whole wasm instance, with its own sql.js once it
/// reads an export).
pub const MAX_AUTO_HELPERS: usize = 4;

/// How many helpers load `files` files of `work` in all ([`work`]) by default, on a browser
/// that reports `cores` cores: one core fewer than there are (the loading worker loads too:
/// what no helper has taken when its turn comes), none for one file or a small load.
pub fn auto_helpers(cores: usize, files: usize, work: u64) -> usize {
    if files < 2 || work < MIN_WORK {
        return 0;
    }
    cores.saturating_sub(1).min(MAX_AUTO_HELPERS).min(files)
}

/// Where one log stands.
#[derive(Debug, Clone, PartialEq)]
pub enum State {
    /// Waiting for a helper.
    Queued,
    /// Being parsed by helper `helper`.
    OnHelper { helper: usize },
    /// Loaded by helper `helper` in `ms`: the result's bytes (`wire::log`, `wire::export`), not
    /// yet added.
    Parsed {
        helper: usize,
        bytes: Vec<u8>,
        ms: f64,
    },
    /// Its helper failed: the loading worker parses it.
    Failed,
    /// Parsed (or being parsed) by the loading worker ahead of its turn, while it waited.
    Ahead,
    /// The loading worker has it (added from its bytes, or parsed in place).
    Taken,
}

/// What the loading worker does with a log whose turn has come.
#[derive(Debug, PartialEq)]
pub enum Claim {
    /// Parse it in place.
    InPlace,
    /// Wait: a helper has it, or will take it.
    Wait,
    /// Take the log the loading worker parsed ahead.
    Ahead,
    /// Add it from these bytes, parsed by helper `helper` in `ms` (the file's load time on
    /// the page is its parse's, not the wait for its turn).
    Ready {
        bytes: Vec<u8>,
        helper: usize,
        ms: f64,
    },
}

#[derive(Debug)]
struct Job {
    /// The file's position in the request.
    file: usize,
    /// Its [`work`]: helpers take the most first.
    size: u64,
    state: State,
}

/// Every file of one request that helpers may load.
#[derive(Debug, Default)]
pub struct ParseJobs {
    jobs: Vec<Job>,
    /// Whether the loading worker parses a log in place when its turn comes before a helper
    /// took it (the default: no core waits for a helper to start); tests and benchmarks that
    /// ask for an exact number of helpers leave every log to them.
    steal: bool,
    /// Logs added from a helper's bytes, and which helpers parsed them.
    from_helpers: usize,
    helpers: std::collections::BTreeSet<usize>,
}

impl ParseJobs {
    /// The files of a request: (position in the request, [`work`]), in request order.
    pub fn new(logs: impl IntoIterator<Item = (usize, u64)>, steal: bool) -> ParseJobs {
        ParseJobs {
            jobs: logs
                .into_iter()
                .map(|(file, size)| Job {
                    file,
                    size,
                    state: State::Queued,
                })
                .collect(),
            steal,
            ..ParseJobs::default()
        }
    }

    pub fn len(&self) -> usize {
        self.jobs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// The request position of job `job`'s file.
    pub fn file(&self, job: usize) -> usize {
        self.jobs[job].file
    }

    pub fn state(&self, job: usize) -> &State {
        &self.jobs[job].state
    }

    /// The job of the request's file `file`, if it is one.
    pub fn job_of(&self, file: usize) -> Option<usize> {
        self.jobs.binary_search_by_key(&file, |j| j.file).ok()
    }

    /// Gives helper `helper` the largest queued log. Of equals, the earliest in the request
    /// when every log is left to helpers (the loading worker adds them in that order as they
    /// come), the latest when the loading worker parses what it reaches first: it walks from
    /// the front, the helpers from the back, and they meet without waiting on each other
    /// (a run's rank logs are of about one size).
    pub fn next_for_helper(&mut self, helper: usize) -> Option<usize> {
        let steal = self.steal;
        let job = self
            .jobs
            .iter()
            .enumerate()
            .filter(|(_, j)| j.state == State::Queued)
            .max_by_key(|(i, j)| {
                let later = if steal { *i as isize } else { -(*i as isize) };
                (j.size, later)
            })
            .map(|(i, _)| i)?;
        self.jobs[job].state = State::OnHelper { helper };
        Some(job)
    }

    /// The loading worker waits for a log on a helper: the earliest queued log (it is needed
    /// soonest), for it to parse ahead meanwhile; none when every log is left to helpers.
    pub fn next_for_loader(&mut self) -> Option<usize> {
        if !self.steal {
            return None;
        }
        let job = self.jobs.iter().position(|j| j.state == State::Queued)?;
        self.jobs[job].state = State::Ahead;
        Some(job)
    }

    /// Puts job `job` back in the queue (it could not be sent to its helper).
    pub fn requeue(&mut self, job: usize) {
        if matches!(self.jobs[job].state, State::OnHelper { .. }) {
            self.jobs[job].state = State::Queued;
        }
    }

    /// Helper `helper` parsed job `job` in `ms`; `false` (and nothing changes) unless it had
    /// it.
    pub fn parsed(&mut self, job: usize, helper: usize, bytes: Vec<u8>, ms: f64) -> bool {
        match self.jobs.get(job).map(|j| &j.state) {
            Some(State::OnHelper { helper: h }) if *h == helper => {
                self.jobs[job].state = State::Parsed { helper, bytes, ms };
                true
            }
            _ => false,
        }
    }

    /// Helper `helper` failed: the log it had (returned) is the loading worker's to parse.
    pub fn failed(&mut self, helper: usize) -> Option<usize> {
        let job = self
            .jobs
            .iter()
            .position(|j| j.state == State::OnHelper { helper })?;
        self.jobs[job].state = State::Failed;
        Some(job)
    }

    /// No helper is left (or none will answer): every log queued or on a helper is the
    /// loading worker's to parse.
    pub fn give_up(&mut self) {
        for j in &mut self.jobs {
            if matches!(j.state, State::Queued | State::OnHelper { .. }) {
                j.state = State::Failed;
            }
        }
    }

    /// Nothing is waiting for a helper or on one: helpers have nothing more to do.
    pub fn settled(&self) -> bool {
        self.jobs
            .iter()
            .all(|j| !matches!(j.state, State::Queued | State::OnHelper { .. }))
    }

    /// The turn of job `job` has come: what the loading worker does with it.
    pub fn claim(&mut self, job: usize) -> Claim {
        let state = &mut self.jobs[job].state;
        match state {
            State::Queued if !self.steal => Claim::Wait,
            State::OnHelper { .. } => Claim::Wait,
            State::Parsed { .. } => match std::mem::replace(state, State::Taken) {
                State::Parsed { bytes, helper, ms } => Claim::Ready { bytes, helper, ms },
                _ => Claim::InPlace,
            },
            State::Ahead => {
                *state = State::Taken;
                Claim::Ahead
            }
            State::Queued | State::Failed | State::Taken => {
                *state = State::Taken;
                Claim::InPlace
            }
        }
    }

    /// A log parsed by helper `helper` was added from its bytes (for the status line).
    pub fn added_from(&mut self, helper: usize) {
        self.from_helpers += 1;
        self.helpers.insert(helper);
    }

    /// How many logs were added from helpers' bytes, and by how many helpers.
    pub fn from_helpers(&self) -> (usize, usize) {
        (self.from_helpers, self.helpers.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ready(bytes: Vec<u8>, helper: usize) -> Claim {
        Claim::Ready {
            bytes,
            helper,
            ms: 1.0,
        }
    }

    #[test]
    fn by_default_one_helper_fewer_than_the_cores_for_several_big_logs() {
        let big = MIN_WORK;
        assert_eq!(auto_helpers(1, 8, big), 0, "one core");
        assert_eq!(auto_helpers(0, 8, big), 0, "no core reported");
        assert_eq!(auto_helpers(2, 8, big), 1);
        assert_eq!(auto_helpers(4, 8, big), 3);
        assert_eq!(auto_helpers(32, 8, big), MAX_AUTO_HELPERS);
        assert_eq!(auto_helpers(8, 2, big), 2, "at most one per log");
        assert_eq!(auto_helpers(8, 1, 10 * big), 0, "one log");
        assert_eq!(auto_helpers(8, 8, big - 1), 0, "a small load");
    }

    #[test]
    fn exports_weigh_more_than_logs_of_their_size() {
        assert_eq!(work(5, false), 5);
        assert_eq!(work(5, true), 5 * EXPORT_WORK_PER_BYTE);
        assert_eq!(work(u64::MAX, true), u64::MAX);
        // A 19 MB log and two 5 MB exports (the 8-rank benchmark run) are worth a helper; the
        // log alone is not, and a helper takes an export first.
        let run = [
            work(19_000_000, false),
            work(5_000_000, true),
            work(5_000_000, true),
        ];
        assert_eq!(auto_helpers(2, 3, run.iter().sum()), 1);
        assert_eq!(auto_helpers(2, 1, run[0]), 0);
        let mut j = ParseJobs::new([(0, run[0]), (1, run[1]), (2, run[2])], true);
        assert_eq!(j.next_for_helper(0), Some(2));
    }

    #[test]
    fn helpers_take_the_largest_first_and_equals_in_order() {
        let mut j = ParseJobs::new([(0, 10), (2, 30), (3, 20), (5, 30)], false);
        assert_eq!(j.job_of(3), Some(2));
        assert_eq!(j.job_of(1), None);
        assert_eq!(j.next_for_helper(0), Some(1));
        assert_eq!(j.next_for_helper(1), Some(3));
        assert_eq!(j.next_for_helper(2), Some(2));
        assert_eq!(j.next_for_helper(3), Some(0));
        assert_eq!(j.next_for_helper(4), None);
        assert!(!j.settled());
    }

    #[test]
    fn results_are_claimed_in_request_order() {
        let mut j = ParseJobs::new([(0, 1), (1, 2)], false);
        assert_eq!(j.next_for_helper(7), Some(1));
        assert_eq!(j.next_for_helper(8), Some(0));
        // The second log is done first: the first one's turn still waits.
        assert!(j.parsed(1, 7, vec![1], 1.0));
        assert_eq!(j.claim(0), Claim::Wait);
        assert!(j.parsed(0, 8, vec![0], 1.0));
        assert!(j.settled());
        assert_eq!(j.claim(0), ready(vec![0], 8));
        assert_eq!(j.claim(1), ready(vec![1], 7));
        assert_eq!(j.claim(1), Claim::InPlace, "never added twice");
    }

    #[test]
    fn only_the_helper_that_has_a_log_answers_for_it() {
        let mut j = ParseJobs::new([(0, 1)], false);
        assert!(!j.parsed(0, 3, vec![], 1.0), "queued, not sent");
        assert_eq!(j.next_for_helper(3), Some(0));
        assert!(!j.parsed(0, 4, vec![], 1.0), "another helper");
        assert_eq!(j.failed(4), None);
        assert!(j.parsed(0, 3, vec![9], 1.0));
        assert!(!j.parsed(0, 3, vec![], 1.0), "answered twice");
        assert_eq!(
            j.failed(3),
            None,
            "a failure after its answer loses nothing"
        );
        assert_eq!(j.claim(0), ready(vec![9], 3));
    }

    #[test]
    fn a_failed_helpers_log_is_parsed_in_place() {
        let mut j = ParseJobs::new([(0, 5), (1, 1)], false);
        assert_eq!(j.next_for_helper(0), Some(0));
        assert_eq!(j.failed(0), Some(0));
        assert_eq!(j.claim(0), Claim::InPlace);
        assert_eq!(j.claim(1), Claim::Wait, "waits for a helper");
        // The last helper gone: the rest in place too.
        j.give_up();
        assert!(j.settled());
        assert_eq!(j.claim(1), Claim::InPlace);
    }

    #[test]
    fn giving_up_leaves_nothing_to_wait_for() {
        let mut j = ParseJobs::new([(0, 5), (1, 1), (2, 1)], false);
        assert_eq!(j.next_for_helper(0), Some(0));
        assert!(j.parsed(0, 0, vec![5], 1.0));
        assert_eq!(j.next_for_helper(1), Some(1));
        j.give_up();
        assert!(j.settled());
        assert_eq!(j.claim(0), ready(vec![5], 0), "what was parsed is kept");
        assert_eq!(j.claim(1), Claim::InPlace);
        assert_eq!(j.claim(2), Claim::InPlace);
    }

    #[test]
    fn the_status_line_counts_logs_added_from_helpers() {
        let mut j = ParseJobs::new([(0, 1), (1, 1), (2, 1)], false);
        j.added_from(4);
        j.added_from(4);
        j.added_from(6);
        assert_eq!(j.from_helpers(), (3, 2));
    }

    #[test]
    fn a_log_that_could_not_be_sent_goes_back_in_the_queue() {
        let mut j = ParseJobs::new([(0, 5)], false);
        assert_eq!(j.next_for_helper(0), Some(0));
        j.requeue(0);
        assert_eq!(j.state(0), &State::Queued);
        assert_eq!(j.next_for_helper(1), Some(0));
    }

    #[test]
    fn when_the_loading_worker_parses_too_helpers_take_equals_from_the_back() {
        let mut j = ParseJobs::new([(0, 5), (1, 5), (2, 9), (3, 5)], true);
        assert_eq!(j.next_for_helper(0), Some(2), "the largest first");
        assert_eq!(j.next_for_helper(1), Some(3));
        assert_eq!(j.claim(0), Claim::InPlace);
        assert_eq!(j.next_for_helper(1), Some(1));
        assert_eq!(j.next_for_helper(1), None);
    }

    #[test]
    fn waiting_for_a_helper_the_loading_worker_parses_the_earliest_queued_log_ahead() {
        let mut j = ParseJobs::new([(0, 90), (1, 5), (3, 1), (4, 5)], true);
        assert_eq!(j.next_for_helper(0), Some(0));
        assert_eq!(j.claim(0), Claim::Wait);
        assert_eq!(j.next_for_loader(), Some(1));
        assert_eq!(j.next_for_loader(), Some(2));
        assert_eq!(
            j.next_for_helper(0),
            Some(3),
            "a helper never takes it then"
        );
        assert_eq!(j.next_for_loader(), None);
        assert!(!j.settled());
        assert!(j.parsed(0, 0, vec![0], 1.0));
        assert!(j.parsed(3, 0, vec![3], 1.0));
        assert!(j.settled(), "nothing is left for helpers");
        assert_eq!(j.claim(0), ready(vec![0], 0));
        assert_eq!(j.claim(1), Claim::Ahead);
        assert_eq!(j.claim(1), Claim::InPlace, "never added twice");
        j.give_up();
        assert_eq!(
            j.claim(2),
            Claim::Ahead,
            "giving up leaves it to the loading worker"
        );
    }

    #[test]
    fn when_every_log_is_left_to_helpers_the_loading_worker_parses_none_ahead() {
        let mut j = ParseJobs::new([(0, 9), (1, 5)], false);
        assert_eq!(j.next_for_helper(0), Some(0));
        assert_eq!(j.claim(0), Claim::Wait);
        assert_eq!(j.next_for_loader(), None);
    }

    #[test]
    fn stealing_parses_in_place_what_no_helper_has_taken() {
        let mut j = ParseJobs::new([(0, 1), (1, 9), (2, 1)], true);
        assert_eq!(j.next_for_helper(0), Some(1));
        // The first log's turn comes before a helper took it: the loading worker parses it.
        assert_eq!(j.claim(0), Claim::InPlace);
        assert_eq!(j.claim(1), Claim::Wait);
        assert!(j.parsed(1, 0, vec![1], 1.0));
        assert_eq!(j.claim(1), ready(vec![1], 0));
        assert!(!j.settled());
        assert_eq!(j.claim(2), Claim::InPlace);
        assert!(j.settled());
        assert_eq!(j.next_for_helper(0), None);
    }
}

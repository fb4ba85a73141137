//! Why a step is slow: StageFrontier's answer (which stage holds the steps' time, and which rank
//! holds that stage), every step's frontier, and the operations slower than their baseline.

use super::{ms, pct, ranks, waiting, InsightsSignal};
use analyses::steps::baselines::Outlier;
use analyses::steps::StepsReport;
use leptos::prelude::*;
use ncclscope_app::page_logic::steps_link::{
    parse_stage_patterns, parse_step_patterns, StepsAsk, StepsView,
};

/// Steps listed at most (the rest are in the command's JSON).
const STEPS_SHOWN: usize = 200;

/// What the Steps view does with the user's choices: `on_set` takes the view's new state
/// (the page asks the worker again when θ or the mapping changed), `on_open` an outlier to
/// show on the timeline.
#[derive(Clone, Copy)]
pub struct StepsControls {
    pub state: RwSignal<StepsView>,
    pub on_set: Callback<StepsView>,
    pub on_open: Callback<Outlier>,
}

#[component]
pub fn StepsPanel(insights: InsightsSignal, controls: StepsControls) -> impl IntoView {
    move || match insights.get() {
        None => waiting().into_any(),
        Some(i) => match &i.steps {
            None => view! {
                <section class="panel steps" data-testid="steps">
                    <h2>"Why is this step slow"</h2>
                    <p class="hint" data-testid="steps-none">
                        "The files show no steps: add a stage file (step,rank,stage,duration_ms), \
                         exports with NVTX ranges per iteration (ProfilerStep#N, iteration N, \
                         train_step), or kernels of a run long enough to show its period."
                    </p>
                    {settings(controls)}
                </section>
            }
            .into_any(),
            Some(r) => body(r, controls).into_any(),
        },
    }
}

fn headline(r: &StepsReport) -> String {
    let w = &r.window;
    match (&w.top1, w.top1_rank) {
        (Some(stage), Some(rank)) => format!(
            "Over {} steps, {stage} holds {} of the step time; rank {rank} holds it most often ({}).",
            w.steps,
            pct(w.share.get(stage).unwrap_or(0.0)),
            w.rank_evidence.clone().unwrap_or_default()
        ),
        (Some(stage), None) => format!(
            "Over {} steps, {stage} holds {} of the step time.",
            w.steps,
            pct(w.share.get(stage).unwrap_or(0.0))
        ),
        _ => "No complete step: every step misses a stage on some rank.".to_string(),
    }
}

fn body(r: &StepsReport, c: StepsControls) -> impl IntoView {
    let w = &r.window;
    let ambiguous = w.ambiguous.clone().map(|a| {
        view! { <p class="hint" data-testid="steps-ambiguous">{format!("The data cannot decide: {a}.")}</p> }
    });
    let shares: Vec<_> = w
        .share
        .0
        .iter()
        .map(|(stage, share)| {
            let candidate = w.candidates.contains(stage);
            view! {
                <tr class:candidate=candidate>
                    <td>{stage.clone()}</td>
                    <td class="num">{pct(*share)}</td>
                    <td class="bar-cell"><span class="bar" style=format!("width:{:.1}%", share * 100.0)></span></td>
                </tr>
            }
        })
        .collect();
    let notes: Vec<_> = r
        .notes
        .iter()
        .map(|n| view! { <li>{n.clone()}</li> })
        .collect();
    let more = r.per_step.len().saturating_sub(STEPS_SHOWN);
    view! {
        <section class="panel steps" data-testid="steps">
            <h2>"Why is this step slow"</h2>
            <p class="headline" data-testid="steps-headline">{headline(r)}</p>
            {ambiguous}
            <p class="hint" data-testid="steps-theta-shown" data-theta=format!("{:.2}", w.theta)>{format!(
                "Steps from {} (confidence {}); StageFrontier with θ = {:.2}: exposed {} over the window, \
                 against {} if every stage waited for its slowest rank and {} on the mean rank.",
                r.source.text(), pct(r.confidence), w.theta, ms(w.frontier_ms), ms(w.sum_of_max_ms), ms(w.sum_of_mean_ms)
            )}</p>
            {settings(c)}
            {rank_picker(r, c)}
            {frontier_chart(r)}
            {slack_map(r, c)}
            {breakdown(r)}
            <h3>"Where the step time goes"</h3>
            <table class="data-table" data-testid="steps-shares">
                <thead><tr><th scope="col">"stage"</th><th scope="col">"share"</th><th scope="col"></th></tr></thead>
                <tbody>{shares}</tbody>
            </table>
            {step_table(r, c)}
            {(more > 0).then(|| view! { <p class="hint">{format!("{more} more steps in the command's JSON (steps.per_step).")}</p> })}
            {outliers(r, c)}
            <ul class="notes">{notes}</ul>
        </section>
    }
}

/// θ and the NVTX mapping's edits (the command's `--theta`, `--step-pattern`,
/// `--stage-pattern`): applied, the worker runs the step analysis again with them.
fn settings(c: StepsControls) -> impl IntoView {
    let now = c.state.get_untracked();
    let theta = RwSignal::new(format!("{:.2}", now.ask.theta.unwrap_or(0.8)));
    let steps = RwSignal::new(now.ask.step_patterns.join(", "));
    let stages = RwSignal::new(
        now.ask
            .stage_patterns
            .iter()
            .map(|(s, g)| format!("{s}={g}"))
            .collect::<Vec<_>>()
            .join("\n"),
    );
    let error = RwSignal::new(None::<String>);
    let apply = move || {
        let t: Result<f64, String> = theta
            .get_untracked()
            .trim()
            .parse()
            .map_err(|_| "θ is not a number".to_string())
            .and_then(|t: f64| {
                (0.7..=0.9)
                    .contains(&t)
                    .then_some(t)
                    .ok_or_else(|| "θ must be within 0.70–0.90".to_string())
            });
        let read = t.and_then(|t| {
            Ok(StepsAsk {
                theta: ((t - 0.8).abs() > 1e-9).then_some(t),
                step_patterns: parse_step_patterns(&steps.get_untracked())?,
                stage_patterns: parse_stage_patterns(&stages.get_untracked())?,
            })
        });
        match read {
            Ok(ask) => {
                error.set(None);
                let mut v = c.state.get_untracked();
                v.ask = ask;
                c.on_set.run(v);
            }
            Err(e) => error.set(Some(e)),
        }
    };
    view! {
        <details class="steps-settings" data-testid="steps-settings" open=!now.ask.eq(&StepsAsk::default())>
            <summary>"Settings: θ and which NVTX ranges are steps and stages"</summary>
            <label>"θ (0.70–0.90) "
                <input type="number" min="0.7" max="0.9" step="0.01" data-testid="steps-theta"
                    prop:value=move || theta.get() on:input=move |e| theta.set(event_target_value(&e)) />
            </label>
            <label>"Step ranges (globs, comma-separated; empty: the defaults) "
                <input type="text" data-testid="steps-step-patterns" placeholder="ProfilerStep#*, iteration*"
                    prop:value=move || steps.get() on:input=move |e| steps.set(event_target_value(&e)) />
            </label>
            <label>"Stage ranges (STAGE=GLOB per line, tried before the defaults) "
                <textarea data-testid="steps-stage-patterns" rows="3" placeholder="forward=*fwd*"
                    prop:value=move || stages.get() on:input=move |e| stages.set(event_target_value(&e))></textarea>
            </label>
            <button data-testid="steps-apply" on:click=move |_| apply()>"Apply"</button>
            {move || error.get().map(|e| view! { <span class="error" data-testid="steps-settings-error">{e}</span> })}
        </details>
    }
}

/// The rank picked: the slack map and the outliers single it out.
fn rank_picker(r: &StepsReport, c: StepsControls) -> impl IntoView {
    let options: Vec<_> = r
        .ranks
        .iter()
        .map(|rank| view! { <option value=rank.to_string()>{format!("rank {rank}")}</option> })
        .collect();
    view! {
        <label class="steps-rank">"Rank "
            <select data-testid="steps-rank"
                prop:value=move || c.state.with(|v| v.rank.map(|r| r.to_string()).unwrap_or_default())
                on:change=move |e| {
                    let mut v = c.state.get_untracked();
                    v.rank = event_target_value(&e).parse().ok();
                    c.on_set.run(v);
                }>
                <option value="">"every rank"</option>
                {options}
            </select>
        </label>
    }
}

/// Every step: its time, longest stage and who held it; a step's number picks it (its
/// advances by stage are shown beneath).
fn step_table(r: &StepsReport, c: StepsControls) -> impl IntoView {
    let rows: Vec<_> = r
        .per_step
        .iter()
        .take(STEPS_SHOWN)
        .map(|s| {
            let total = s.frontier_ms.last().copied().unwrap_or(0.0);
            let (k, _) = s
                .advance_ms
                .iter()
                .enumerate()
                .fold(
                    (0, f64::MIN),
                    |best, (k, &a)| if a > best.1 { (k, a) } else { best },
                );
            let stage = r.stage_names.get(k).cloned().unwrap_or_default();
            let leaders = s.leaders.get(k).map(|l| ranks(l)).unwrap_or_default();
            let step = s.step;
            let picked = move || c.state.with(|v| v.step == Some(step));
            view! {
                <tr class:selected=picked>
                    <td class="num"><button class="link" data-testid="steps-step" data-step=step.to_string()
                        aria-pressed=move || picked().to_string()
                        on:click=move |_| {
                            let mut v = c.state.get_untracked();
                            v.step = if v.step == Some(step) { None } else { Some(step) };
                            c.on_set.run(v);
                        }>{step}</button></td>
                    <td class="num">{s.ranks}</td>
                    <td class="num">{ms(total)}</td>
                    <td>{stage}</td>
                    <td class="num">{leaders}</td>
                    <td>{s.incomplete.clone().unwrap_or_default()}</td>
                </tr>
            }
        })
        .collect();
    let names = r.stage_names.clone();
    let per_step = r.per_step.clone();
    let detail = move || {
        let step = c.state.with(|v| v.step)?;
        let s = per_step.iter().find(|s| s.step == step)?;
        let items: Vec<_> = s
            .advance_ms
            .iter()
            .enumerate()
            .map(|(k, a)| {
                let leaders = s.leaders.get(k).map(|l| ranks(l)).unwrap_or_default();
                let name = names.get(k).cloned().unwrap_or_default();
                view! { <li>{format!("{name}: +{} (rank {leaders} at its end)", ms(*a))}</li> }
            })
            .collect();
        Some(view! {
            <div data-testid="steps-step-detail" data-step=step.to_string()>
                <h4>{format!("Step {step}: the frontier's advance by stage")}</h4>
                <ul>{items}</ul>
            </div>
        })
    };
    view! {
        <h3>"Every step"</h3>
        <table class="data-table" data-testid="steps-per-step">
            <thead><tr>
                <th scope="col">"step"</th><th scope="col">"ranks"</th><th scope="col">"time"</th>
                <th scope="col">"longest stage"</th><th scope="col">"held by rank"</th><th scope="col">"left out"</th>
            </tr></thead>
            <tbody>{rows}</tbody>
        </table>
        {detail}
    }
}

/// The instances furthest above their baseline, of the rank picked if any; each opens on the
/// timeline.
fn outliers(r: &StepsReport, c: StepsControls) -> Option<impl IntoView> {
    let worst = r.baselines.as_ref()?.worst.clone();
    let rows = move || {
        let rank = c.state.with(|v| v.rank);
        worst
            .iter()
            .filter(|o| rank.is_none() || o.rank == rank)
            .map(|o| {
                let open = o.clone();
                view! {
                    <tr>
                        <td><button class="link" data-testid="steps-outlier-open" data-kind=o.kind.clone()
                            data-start=o.start_ns.to_string() data-sync-start=o.sync_start_ns.to_string()
                            title="Show it on the timeline"
                            on:click=move |_| c.on_open.run(open.clone())>{o.what.clone()}</button></td>
                        <td class="num">{o.rank.map(|x| x.to_string()).unwrap_or_default()}</td>
                        <td class="num">{o.step.map(|x| x.to_string()).unwrap_or_default()}</td>
                        <td class="num">{ms(o.duration_ms)}</td>
                        <td class="num">{ms(o.baseline_ms)}</td>
                        <td class="num">{ms(o.excess_ms)}</td>
                    </tr>
                }
            })
            .collect::<Vec<_>>()
    };
    Some(view! {
        <h3>"Slower than their baseline"</h3>
        <table class="data-table" data-testid="steps-outliers">
            <thead><tr>
                <th scope="col">"operation (opens it on the timeline)"</th><th scope="col">"rank"</th><th scope="col">"step"</th>
                <th scope="col">"took"</th><th scope="col">"baseline"</th><th scope="col">"excess"</th>
            </tr></thead>
            <tbody>{rows}</tbody>
        </table>
    })
}

/// Stages' colours, by index (repeating past eight).
const STAGE_COLOURS: [&str; 8] = [
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f",
];

/// Per step, a bar of the frontier's advances stacked by stage (the step's exposed time), each
/// segment titled with the stage and the rank(s) at its boundary.
fn frontier_chart(r: &StepsReport) -> impl IntoView {
    let steps: Vec<_> = r.per_step.iter().take(STEPS_SHOWN).collect();
    let longest = steps
        .iter()
        .map(|s| s.advance_ms.iter().sum::<f64>())
        .fold(0.0_f64, f64::max)
        .max(1e-9);
    let (label_w, plot_w, row_h) = (56.0, 520.0, 14.0);
    let height = row_h * steps.len() as f64 + 24.0;
    let bars: Vec<_> = steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let y = i as f64 * row_h;
            let mut x = label_w;
            let segments: Vec<_> = s
                .advance_ms
                .iter()
                .enumerate()
                .filter(|(_, a)| **a > 0.0)
                .map(|(k, a)| {
                    let w = a / longest * plot_w;
                    let stage = r.stage_names.get(k).cloned().unwrap_or_default();
                    let leaders = s.leaders.get(k).map(|l| ranks(l)).unwrap_or_default();
                    let title = format!("step {}: {stage} {} (rank {leaders} at its end)", s.step, ms(*a));
                    let seg = view! {
                        <rect x=format!("{x:.1}") y=format!("{:.1}", y + 1.0) width=format!("{:.1}", w.max(0.5))
                            height=format!("{:.1}", row_h - 2.0) fill=STAGE_COLOURS[k % STAGE_COLOURS.len()]>
                            <title>{title}</title>
                        </rect>
                    };
                    x += w;
                    seg
                })
                .collect();
            view! {
                <g>
                    <text x=format!("{:.1}", label_w - 4.0) y=format!("{:.1}", y + row_h - 3.0) text-anchor="end" class="chart-label">{s.step}</text>
                    {segments}
                </g>
            }
        })
        .collect();
    let legend: Vec<_> = r
        .stage_names
        .iter()
        .enumerate()
        .map(|(k, name)| {
            view! {
                <span class="swatch-item">
                    <span class="swatch" style=format!("background:{}", STAGE_COLOURS[k % STAGE_COLOURS.len()])></span>
                    {name.clone()}
                </span>
            }
        })
        .collect();
    let axis_y = height - 8.0;
    view! {
        <figure class="chart" data-testid="steps-frontier-chart" tabindex="0">
            <figcaption>"Each step's time as the frontier advanced, by stage (the slowest rank at each stage's end); step number on the left"</figcaption>
            <div class="legend">{legend}</div>
            <svg role="img" aria-label="The frontier's advances per step, stacked by stage"
                viewBox=format!("0 0 {} {height:.0}", label_w + plot_w + 10.0) width=format!("{}", label_w + plot_w + 10.0)>
                {bars}
                <text x=format!("{label_w}") y=format!("{axis_y:.1}") class="chart-axis">"0"</text>
                <text x=format!("{}", label_w + plot_w) y=format!("{axis_y:.1}") text-anchor="end" class="chart-axis">{ms(longest)}</text>
            </svg>
        </figure>
    }
}

/// Rank × stage: how far behind the frontier each rank was at each stage's end, on average.
fn slack_map(r: &StepsReport, c: StepsControls) -> Option<impl IntoView> {
    let slack = &r.window.slack_ms;
    if slack.is_empty() || r.ranks.len() > 256 {
        return None;
    }
    let most = slack
        .iter()
        .flatten()
        .copied()
        .fold(0.0_f64, f64::max)
        .max(1e-9);
    let (label_w, cell_w, cell_h) = (48.0, 64.0, 12.0);
    let stages = slack.first().map_or(0, Vec::len);
    let cells: Vec<_> = slack
        .iter()
        .zip(&r.ranks)
        .enumerate()
        .flat_map(|(i, (row, rank))| {
            let y = 16.0 + i as f64 * cell_h;
            let rank = *rank;
            let picked = move || c.state.with(|v| v.rank == Some(rank));
            let label = view! {
                <text x=format!("{:.1}", label_w - 4.0) y=format!("{:.1}", y + cell_h - 2.0) text-anchor="end"
                    class="chart-label" class:picked=picked font-weight=move || if picked() { "bold" } else { "normal" }>{rank}</text>
            }
            .into_any();
            std::iter::once(label).chain(row.iter().enumerate().map(move |(k, v)| {
                let stage = r.stage_names.get(k).cloned().unwrap_or_default();
                view! {
                    <rect x=format!("{:.1}", label_w + k as f64 * cell_w) y=format!("{y:.1}") width=format!("{}", cell_w - 1.0) height=format!("{}", cell_h - 1.0)
                        style=format!("fill: var(--bad); fill-opacity: {:.3}", 0.05 + 0.95 * v / most)>
                        <title>{format!("rank {rank}, {stage}: {} behind the frontier on average", ms(*v))}</title>
                    </rect>
                }
                .into_any()
            }))
        })
        .collect();
    let heads: Vec<_> = r
        .stage_names
        .iter()
        .take(stages)
        .enumerate()
        .map(|(k, n)| view! {
            <text x=format!("{:.1}", label_w + k as f64 * cell_w + cell_w / 2.0) y="11" text-anchor="middle" class="chart-label">{n.clone()}</text>
        })
        .collect();
    let w = label_w + cell_w * stages as f64 + 4.0;
    let h = 20.0 + cell_h * slack.len() as f64;
    Some(view! {
        <figure class="chart" data-testid="steps-slack" tabindex="0">
            <figcaption>{format!("Slack: rank (row) × stage, how far behind the frontier at the stage's end (darker is more, up to {})", ms(most))}</figcaption>
            <svg role="img" aria-label="Each rank's mean slack per stage" viewBox=format!("0 0 {w:.0} {h:.0}") width=format!("{w:.0}")>
                {heads}
                {cells}
            </svg>
        </figure>
    })
}

/// Where a step's time went on the GPU, measured, beside the closed forms' prediction.
fn breakdown(r: &StepsReport) -> impl IntoView {
    let Some(b) = &r.breakdown else {
        return view! {
            <p class="hint" data-testid="steps-no-breakdown">
                "No breakdown of the step time: it needs the exports' kernels over the steps                  (the command also reads the compute kernels: ncclscope analyze)."
            </p>
        }
        .into_any();
    };
    let m = &b.mean;
    let exposed: Vec<_> = m
        .exposed_ms
        .iter()
        .map(|(p, v)| view! { <tr data-term=format!("exposed-{p}") data-ms=v.to_string()><td>{format!("exposed {p} communication")}</td><td class="num">{ms(*v)}</td><td></td><td></td></tr> })
        .collect();
    let closed = b.closed_form.as_ref().map(|c| {
        let row = |name: &'static str, measured: Option<f64>, predicted: Option<f64>| {
            let ratio = match (measured, predicted) {
                (Some(a), Some(p)) if p > 0.0 => format!("{:.2}", a / p),
                _ => "—".into(),
            };
            view! {
                <tr><td>{name}</td>
                <td class="num">{measured.map(ms).unwrap_or_else(|| "—".into())}</td>
                <td class="num">{predicted.map(ms).unwrap_or_else(|| "—".into())}</td>
                <td class="num">{ratio}</td></tr>
            }
        };
        let (me, pr) = (&c.measured, &c.predicted);
        view! {
            <h4>"Measured against the closed forms (ConfigTuner)"</h4>
            <table class="data-table" data-testid="steps-closed-form">
                <thead><tr><th scope="col">"term"</th><th scope="col">"measured"</th><th scope="col">"predicted"</th><th scope="col">"measured / predicted"</th></tr></thead>
                <tbody>
                    {row("compute", me.comp_ms, pr.comp_ms)}
                    {row("TP", me.tp_ms, pr.tp_ms)}
                    {row("PP", me.pp_ms, pr.pp_ms)}
                    {row("DP", me.dp_ms, pr.dp_ms)}
                    {row("bubble", me.bubble_ms, pr.bubble_ms)}
                    {row("iteration", me.iter_ms, pr.iter_ms)}
                </tbody>
            </table>
        }
    });
    view! {
        <h3>"Where a step's time goes on the GPU"</h3>
        <table class="data-table" data-testid="steps-breakdown">
            <thead><tr><th scope="col">"mean per rank and step"</th><th scope="col">"ms"</th><th></th><th></th></tr></thead>
            <tbody>
                <tr data-term="step" data-ms=m.step_ms.to_string()><td>"step"</td><td class="num">{ms(m.step_ms)}</td><td></td><td></td></tr>
                <tr data-term="compute" data-ms=m.compute_ms.to_string()><td>"compute busy"</td><td class="num">{ms(m.compute_ms)}</td><td></td><td></td></tr>
                {exposed}
                <tr data-term="bubble" data-ms=m.bubble_ms.to_string()><td>"pipeline bubble"</td><td class="num">{ms(m.bubble_ms)}</td><td></td><td></td></tr>
                <tr data-term="idle" data-ms=m.idle_ms.to_string()><td>"idle"</td><td class="num">{ms(m.idle_ms)}</td><td></td><td></td></tr>
            </tbody>
        </table>
        {closed}
    }
    .into_any()
}

/// The overview's step summary once the insights are in: which stage and rank hold the steps'
/// time, a click away from the Steps view (nothing when the files show no steps).
#[component]
pub fn StepsCard(insights: InsightsSignal, on_open: Callback<()>) -> impl IntoView {
    move || {
        let i = insights.get()?;
        let r = i.steps.as_ref()?;
        let w = &r.window;
        let text = match (&w.top1, w.top1_rank) {
            (Some(stage), Some(rank)) => format!(
                "{} steps: {stage} holds {} of the step time, most often on rank {rank}.",
                w.steps,
                pct(w.share.get(stage).unwrap_or(0.0))
            ),
            (Some(stage), None) => format!(
                "{} steps: {stage} holds {} of the step time.",
                w.steps,
                pct(w.share.get(stage).unwrap_or(0.0))
            ),
            _ => format!(
                "{} steps found; none complete on every rank.",
                r.per_step.len()
            ),
        };
        Some(view! {
            <section class="card" data-testid="overview-steps">
                <h3>"Steps"</h3>
                <p><button class="link" data-go="steps" on:click=move |_| on_open.run(())>{text}</button></p>
            </section>
        })
    }
}

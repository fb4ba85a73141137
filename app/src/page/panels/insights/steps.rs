//! Why a step is slow: StageFrontier's answer (which stage holds the steps' time, and which rank
//! holds that stage), every step's frontier, and the operations slower than their baseline.

use super::{ms, pct, ranks, waiting, InsightsSignal};
use analyses::steps::StepsReport;
use leptos::prelude::*;

/// Steps listed at most (the rest are in the command's JSON).
const STEPS_SHOWN: usize = 200;

#[component]
pub fn StepsPanel(insights: InsightsSignal) -> impl IntoView {
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
                </section>
            }
            .into_any(),
            Some(r) => body(r).into_any(),
        },
    }
}

fn body(r: &StepsReport) -> impl IntoView {
    let w = &r.window;
    let headline = match (&w.top1, w.top1_rank) {
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
    };
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
    let steps: Vec<_> = r
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
            view! {
                <tr>
                    <td class="num">{s.step}</td>
                    <td class="num">{s.ranks}</td>
                    <td class="num">{ms(total)}</td>
                    <td>{stage}</td>
                    <td class="num">{leaders}</td>
                    <td>{s.incomplete.clone().unwrap_or_default()}</td>
                </tr>
            }
        })
        .collect();
    let worst = r.baselines.as_ref().map(|b| {
        let rows: Vec<_> = b
            .worst
            .iter()
            .map(|o| {
                view! {
                    <tr>
                        <td>{o.what.clone()}</td>
                        <td class="num">{o.rank.map(|x| x.to_string()).unwrap_or_default()}</td>
                        <td class="num">{o.step.map(|x| x.to_string()).unwrap_or_default()}</td>
                        <td class="num">{ms(o.duration_ms)}</td>
                        <td class="num">{ms(o.baseline_ms)}</td>
                        <td class="num">{ms(o.excess_ms)}</td>
                    </tr>
                }
            })
            .collect();
        view! {
            <h3>"Slower than their baseline"</h3>
            <table class="data-table" data-testid="steps-outliers">
                <thead><tr>
                    <th scope="col">"operation"</th><th scope="col">"rank"</th><th scope="col">"step"</th>
                    <th scope="col">"took"</th><th scope="col">"baseline"</th><th scope="col">"excess"</th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table>
        }
    });
    let notes: Vec<_> = r
        .notes
        .iter()
        .map(|n| view! { <li>{n.clone()}</li> })
        .collect();
    let more = r.per_step.len().saturating_sub(STEPS_SHOWN);
    view! {
        <section class="panel steps" data-testid="steps">
            <h2>"Why is this step slow"</h2>
            <p class="headline" data-testid="steps-headline">{headline}</p>
            {ambiguous}
            <p class="hint">{format!(
                "Steps from {:?} (confidence {}); StageFrontier with θ = {:.2}: exposed {} over the window, \
                 against {} if every stage waited for its slowest rank and {} on the mean rank.",
                r.source, pct(r.confidence), w.theta, ms(w.frontier_ms), ms(w.sum_of_max_ms), ms(w.sum_of_mean_ms)
            )}</p>
            <h3>"Where the step time goes"</h3>
            <table class="data-table" data-testid="steps-shares">
                <thead><tr><th scope="col">"stage"</th><th scope="col">"share"</th><th scope="col"></th></tr></thead>
                <tbody>{shares}</tbody>
            </table>
            <h3>"Every step"</h3>
            <table class="data-table" data-testid="steps-per-step">
                <thead><tr>
                    <th scope="col">"step"</th><th scope="col">"ranks"</th><th scope="col">"time"</th>
                    <th scope="col">"longest stage"</th><th scope="col">"held by rank"</th><th scope="col">"left out"</th>
                </tr></thead>
                <tbody>{steps}</tbody>
            </table>
            {(more > 0).then(|| view! { <p class="hint">{format!("{more} more steps in the command's JSON (steps.per_step).")}</p> })}
            {worst}
            <ul class="notes">{notes}</ul>
        </section>
    }
}

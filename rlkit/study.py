"""The numbers an ablation study reports per run (capstone B), defined once.

A run's training log holds, per update, the returns of the episodes that
finished during that update's rollout. Two numbers summarise a run:

* ``mean_training_return``: the learning curve's mean, i.e. the area under
  it divided by its length: per update the mean return of the episodes that
  finished in it, averaged over the updates in which any finished. It
  measures learning *speed*: a run that reaches 500 at update 10 scores
  more than one that gets there at update 40, where both end at 500.
* ``final_eval_median``: the median return of the final policy over
  evaluation episodes with sampled actions (capstone A's bar).

A table row also carries the learning curve itself (:func:`curve_row`): the
grader re-runs the first updates of every run and compares them with it.

Which of them is the per-seed number of the study is declared in
``assignments/b_ablations/assignment.toml`` (``per_seed``); the judge, the
benchmark and the notebook all compute it with :func:`per_seed_numbers`.
Returns are undiscounted episode returns in [0, 500].
"""
import numpy as np

MEASURES = ("mean_training_return", "final_eval_median")
NONE_FINISHED = -1.0    # a table's curve entry for an update in which no episode finished


def learning_curve(episode_returns):
    """``(U,) float64``: per update, the mean return of the episodes that
    finished in it (NaN where none finished).

    Args:
        episode_returns: a list of U arrays ``(k_u,)``, one per update (a
            ``train`` log's ``"episode_returns"``).
    """
    return np.array([np.mean(r) if np.size(r) else np.nan for r in episode_returns],
                    dtype=np.float64)


def mean_training_return(episode_returns):
    """The learning curve's mean over the updates in which an episode
    finished (float; NaN if none did)."""
    curve = learning_curve(episode_returns)
    finite = curve[~np.isnan(curve)]
    return float(finite.mean()) if finite.size else float("nan")


def per_seed_numbers(episode_returns, eval_returns):
    """``{measure: float}`` for every name of :data:`MEASURES`.

    Args:
        episode_returns: the run's per-update training-episode returns.
        eval_returns: ``(episodes,)`` returns of the final policy's
            evaluation episodes.
    """
    return {"mean_training_return": mean_training_return(episode_returns),
            "final_eval_median": float(np.median(np.asarray(eval_returns, dtype=np.float64)))}


def curve_row(episode_returns):
    """The learning curve as a table row holds it (plain numbers, JSON-safe):
    a list of U floats, per update the mean return of the episodes that
    finished in it, :data:`NONE_FINISHED` where none did."""
    return [NONE_FINISHED if np.isnan(x) else float(x) for x in learning_curve(episode_returns)]


def mean_of_curve_row(row):
    """The mean training return of a :func:`curve_row` (NaN if no update had
    a finished episode)."""
    values = np.asarray(row, dtype=np.float64)
    finite = values[values != NONE_FINISHED]
    return float(finite.mean()) if finite.size else float("nan")

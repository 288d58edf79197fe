"""The paper's figures from the analysis tables (I/O at the edge only).

Each function takes tables and a path stem, draws one figure, saves it as
`<stem>.png` (Agg) and `<stem>.pdf`, and returns the paths: reward against
compute in `frontier`, the compute-optimal n in `laws`, the secondary studies
in `studies`, the shared look in `style`. `plot_all` draws every figure the
results support, by the settings they were computed with; the figures read
tables only (Fig. 5's pooled records and curve too: `record_points_pooled`,
`record_fit_pooled`).
"""

from __future__ import annotations

from pathlib import Path

from isocompute.analysis.fits.settings import AnalysisSettings
from isocompute.analysis.plots.frontier import (View, plot_frontier, plot_frontiers_fixed_batch, plot_frontiers_grid,
                                                plot_record_points)
from isocompute.analysis.plots.laws import (plot_fixed_batch, plot_joint, plot_n_star_law, plot_n_star_law_grid,
                                            plot_n_star_laws)
from isocompute.analysis.plots.studies import (plot_interference, plot_mechanism, plot_metric_frontiers,
                                               plot_metric_optima, plot_sensitivity)
from isocompute.plotting import FORMATS

__all__ = ["FORMATS", "plot_all", "plot_fixed_batch", "plot_frontier", "plot_frontiers_fixed_batch",
           "plot_frontiers_grid", "plot_interference", "plot_joint", "plot_mechanism", "plot_metric_frontiers",
           "plot_metric_optima", "plot_n_star_law", "plot_n_star_law_grid", "plot_n_star_laws", "plot_record_points",
           "plot_sensitivity"]


def plot_all(results: dict, fig_dir, *, formats=FORMATS) -> list[Path]:
    """Every figure the results support, into `fig_dir`."""
    fig_dir = Path(fig_dir)
    evals, fits, front = results["evals"], results["fits"], results["frontier"]
    # Tables without params.json come from before the noise method: the paper's.
    s = results.get("settings") or AnalysisSettings.from_json({})
    metric = s.metric
    curves = dict(metric=metric, extrapolate=not s.observed_range, formats=formats)
    view = View(metric, extrapolate=not s.observed_range)
    # The noise method fits every evaluation; the paper's records are lighter to draw behind its curves.
    points = s.strategy.figure_points(results.get("records"), evals)
    paths: list[Path] = []
    if not front.empty:
        # The paper's main panels use its smallest B_p (32).
        B_p = int(front["B_p"].min())
        paths += plot_record_points(results, B_p, fig_dir / "fig5_record_points", settings=s, formats=formats)
        paths += plot_frontier(evals, fits, front, B_p, fig_dir / "fig6_frontier", view=view, formats=formats)
        draws = results.get("n_star_fit_draws")   # the law's bootstrap fits: its bands
        paths += plot_n_star_law(front, results["n_star_fit"], fig_dir / "fig7_n_star", key=B_p, draws=draws,
                                 formats=formats)
        paths += plot_n_star_laws(front, results["n_star_fit"], fig_dir / "appendix_n_star_laws", draws=draws,
                                  formats=formats)
        paths += plot_n_star_law_grid(front, results["n_star_fit"], fig_dir / "appendix_n_star_fixed_bp",
                                      draws=draws, formats=formats)
        paths += plot_frontiers_grid(points, fits, front, fig_dir / "appendix_frontiers_fixed_bp", view=view,
                                     formats=formats)
    if len(results.get("optima", [])):
        paths += plot_metric_optima(results["optima"], fig_dir / "fig8_metric_optima", formats=formats)
    if len(results.get("frontier_metrics", [])):   # Fig. 20 on Extremely Hard
        paths += plot_metric_frontiers(results["frontier_metrics"], fig_dir / "appendix_best_worst_frontiers",
                                       formats=formats)
    if len(results.get("frontier_fixed_batch", [])):
        paths += plot_fixed_batch(results["frontier_fixed_batch"], results["n_star_fit_fixed_batch"],
                                  fig_dir / "fig9_fixed_batch", formats=formats)
        paths += plot_frontiers_fixed_batch(points, fits, results["frontier_fixed_batch"],
                                            fig_dir / "appendix_frontiers_fixed_batch", view=view, formats=formats)
    if len(results.get("sensitivity", [])):
        paths += plot_sensitivity(results["sensitivity"], fig_dir / "fig10_sensitivity", fits=fits, **curves)
    if len(results.get("interference", [])):
        paths += plot_interference(results["interference"], fig_dir / "fig11_interference", formats=formats)
    if len(results.get("mechanism", [])):
        paths += plot_mechanism(results["mechanism"], fig_dir / "mechanism_zero_variance", formats=formats)
    if len(results.get("frontier_joint", [])) and results["frontier_joint"]["n_star"].notna().any():
        paths += plot_joint(results["frontier_joint"], results["n_star_fit_joint"], fig_dir / "appendix_joint",
                            formats=formats)
    if len(results.get("frontier_tokens", [])):
        tok_points = points if "tokens" in points else evals
        paths += plot_frontiers_grid(tok_points, results["fits_tokens"], results["frontier_tokens"],
                                     fig_dir / "appendix_tokens_frontier", view=view._replace(x="tokens"),
                                     formats=formats)
    if len(results.get("n_star_fit_tokens", [])) and "log2_n_star_avg" in results["frontier_tokens"]:
        paths += plot_n_star_laws(results["frontier_tokens"], results["n_star_fit_tokens"],
                                  fig_dir / "appendix_n_star_laws_tokens", x="tokens", formats=formats)
    return paths

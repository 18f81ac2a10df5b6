# Profile-likelihood intervals from R lme4 for hce.stats.variance_components
# (tests/stats/test_component_intervals.py::test_profile_search_matches_lme4_on_the_ml_deviance).
#
# Regenerate from the repository root (needs R with lme4 and jsonlite; Debian:
# apt-get install r-base-core r-cran-lme4 r-cran-jsonlite):
#
#   Rscript tests/stats/r/lme4_profile_reference.R tests/stats/data/lme4_profile
#
# Reads every <name>.csv in the folder (columns item_id, rater, log_sd: the log SD of each
# item x rater cell of tests/stats/test_mixed_agreement.py's attempt_log(seed, 7, 3, 0.25,
# 0, 1), written by that test's helper with 17 significant digits) and writes
# reference.json there: for each design the ML variances and confint(fit, method =
# "profile", level = 0.95) squared (variances), with the R and lme4 versions. The fit is by
# ML because lme4 profiles the ML deviance whatever the fit (profile.merMod refits a REML fit
# with refitML; lme4 issues #325 and #838), so the reference checks hce's profile search on
# the same ML deviance; hce's variance_components profiles the REML deviance instead. The
# fits use tight BOBYQA tolerances so that the optimum is not the limit of the comparison;
# the profile is lme4's own (a spline through its profile points).

suppressPackageStartupMessages({
  library(lme4)
  library(jsonlite)
})

args <- commandArgs(trailingOnly = TRUE)
if (length(args) != 1) stop("usage: Rscript lme4_profile_reference.R DATA_DIR")
data_dir <- args[[1]]
tight <- lmerControl(optCtrl = list(xtol_abs = 1e-12, ftol_abs = 1e-14, xtol_rel = 1e-12,
                                    ftol_rel = 1e-14, maxeval = 1e5))

out <- list(R = R.version.string, lme4 = as.character(packageVersion("lme4")), designs = list())
for (path in sort(Sys.glob(file.path(data_dir, "*.csv")))) {
  d <- read.csv(path, stringsAsFactors = FALSE)
  fit <- suppressMessages(lmer(log_sd ~ 1 + (1 | item_id) + (1 | rater), data = d,
                               REML = FALSE, control = tight))
  vc <- as.data.frame(VarCorr(fit))
  ci <- suppressWarnings(suppressMessages(
    confint(fit, method = "profile", level = 0.95, oldNames = FALSE)))
  row <- function(name) ci[name, ]^2
  out$designs[[sub("\\.csv$", "", basename(path))]] <- list(
    component = c("item_id", "rater", "residual"),
    estimate = vc$vcov[match(c("item_id", "rater", "Residual"), vc$grp)],
    ci_low = c(row("sd_(Intercept)|item_id")[[1]], row("sd_(Intercept)|rater")[[1]], row("sigma")[[1]]),
    ci_high = c(row("sd_(Intercept)|item_id")[[2]], row("sd_(Intercept)|rater")[[2]], row("sigma")[[2]])
  )
}
writeLines(toJSON(out, digits = I(10), auto_unbox = TRUE, pretty = TRUE),
           file.path(data_dir, "reference.json"))

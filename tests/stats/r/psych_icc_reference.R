# Reference values from R psych::ICC(x, lmer = TRUE) and lme4 for hce.stats.icc on incomplete
# designs (tests/stats/reliability/test_icc_psych.py).
#
# Regenerate from the repository root (needs R with psych, lme4 and jsonlite; Debian:
# apt-get install r-base-core r-cran-lme4 r-cran-psych):
#
#   Rscript tests/stats/r/psych_icc_reference.R tests/stats/data
#
# It draws 12 random targets x raters designs (15-40 targets, 3-6 raters, 10-25% of the cells
# missing, every target keeping at least one rating) from fixed seeds, writes them in long form
# to <out>/psych_icc_designs.csv (design, target, rater, rating) and writes
# <out>/psych_icc_reference.json with, per design:
#   psych:    psych::ICC(wide, lmer = TRUE)$results (the six forms with F, df, p and the
#             bounds) and its lme4 variance table: the "k = raters" convention;
#   harmonic: the variance components behind hce's default convention, from lme4 directly:
#             the crossed fit rating ~ 1 + (1 | target) + (1 | rater), the one-way fit
#             rating ~ 1 + (1 | target) (tight tolerances), k = harmonic mean of ratings per target, and the six
#             estimates they give (see hce.stats.icc's docstring for the formulas).
# plus the R, psych and lme4 versions.

# Re-running rewrites the data byte for byte; the fitted values agree with the stored ones to
# about 1e-10 relative (lme4's optimiser is not bit-reproducible from run to run here).

suppressPackageStartupMessages({
  library(lme4)
  library(psych)
  library(jsonlite)
})

args <- commandArgs(trailingOnly = TRUE)
if (length(args) != 1) stop("usage: Rscript psych_icc_reference.R OUT_DIR")
out_dir <- args[[1]]

draw <- function(seed) {
  set.seed(seed)
  n <- sample(15:40, 1)
  k <- sample(3:6, 1)
  p_miss <- runif(1, 0.10, 0.25)
  s_t <- runif(1, 0.5, 2)
  s_r <- runif(1, 0, 1)
  wide <- outer(rnorm(n, 0, s_t), rnorm(k, 0, s_r), "+") + 3 + matrix(rnorm(n * k), n)
  wide <- round(wide, 1)
  cells <- which(runif(n * k) < p_miss)
  wide[cells] <- NA
  empty <- which(rowSums(!is.na(wide)) == 0)  # keep one rating for each target
  for (i in empty) wide[i, sample.int(k, 1)] <- round(3 + rnorm(1), 1)
  colnames(wide) <- paste0("r", seq_len(k))
  rownames(wide) <- sprintf("t%02d", seq_len(n))
  wide
}

# psych fits lme4 with its default control (variances converged to about 1e-5 relative);
# the lme4 fits made here directly use tolerances tightened to 1e-12
tight <- lmerControl(optCtrl = list(xtol_abs = 1e-12, ftol_abs = 1e-14, xtol_rel = 1e-12,
                                    ftol_rel = 1e-14, maxeval = 1e5))

components <- function(fit) {
  vc <- as.data.frame(VarCorr(fit))
  setNames(vc$vcov, vc$grp)
}

designs <- list()
long <- list()
for (seed in 201:212) {
  wide <- draw(seed)
  name <- sprintf("d%d", seed)
  d <- data.frame(target = rep(rownames(wide), ncol(wide)),
                  rater = rep(colnames(wide), each = nrow(wide)),
                  rating = as.vector(wide))
  d <- d[!is.na(d$rating), ]
  long[[name]] <- cbind(design = name, d)

  res <- suppressMessages(psych::ICC(as.data.frame(wide), lmer = TRUE))
  tab <- res$results
  crossed <- components(lmer(rating ~ 1 + (1 | target) + (1 | rater), data = d,
                             control = tight))
  oneway <- components(lmer(rating ~ 1 + (1 | target), data = d, control = tight))
  k_h <- nrow(wide) / sum(1 / table(d$target))
  vt <- crossed[["target"]]
  vr <- crossed[["rater"]]
  ve <- crossed[["Residual"]]
  vt1 <- oneway[["target"]]
  vw <- oneway[["Residual"]]
  designs[[name]] <- list(
    n_targets = nrow(wide), n_raters = ncol(wide), n_ratings = nrow(d),
    share_missing = 1 - nrow(d) / length(wide),
    psych = list(type = tab$type, ICC = tab$ICC, F = tab$F, df1 = tab$df1, df2 = tab$df2,
                 p = tab$p, lower = tab[["lower bound"]], upper = tab[["upper bound"]],
                 variance = unname(res$lme[1:3, "variance"])),
    harmonic = list(
      k = k_h, var_target = vt, var_rater = vr, var_error = ve,
      var_target_oneway = vt1, var_within_oneway = vw,
      type = c("ICC1", "ICC2", "ICC3", "ICC1k", "ICC2k", "ICC3k"),
      ICC = c(vt1 / (vt1 + vw), vt / (vt + vr + ve), vt / (vt + ve),
              k_h * vt1 / (k_h * vt1 + vw), k_h * vt / (k_h * vt + vr + ve),
              k_h * vt / (k_h * vt + ve))
    )
  )
}

write.csv(do.call(rbind, long), file.path(out_dir, "psych_icc_designs.csv"), row.names = FALSE)
out <- list(
  r_version = R.version.string,
  psych_version = as.character(packageVersion("psych")),
  lme4_version = as.character(packageVersion("lme4")),
  generated_by = "tests/stats/r/psych_icc_reference.R",
  designs = designs
)
writeLines(toJSON(out, auto_unbox = TRUE, digits = NA, pretty = TRUE),
           file.path(out_dir, "psych_icc_reference.json"))
cat("wrote", length(designs), "designs to", file.path(out_dir, "psych_icc_reference.json"), "\n")

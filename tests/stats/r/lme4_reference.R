# Reference values from R lme4 for hce.stats.lmer (tests/stats/test_lme4_reference.py).
#
# Regenerate from the repository root (needs R with lme4 and jsonlite; Debian:
# apt-get install r-base-core r-cran-lme4):
#
#   Rscript tests/stats/r/lme4_reference.R tests/stats/data \
#     "$(python -c 'import os, statsmodels; print(os.path.dirname(statsmodels.__file__))')/regression/tests/results"
#
# Arguments: the output folder, and statsmodels' folder of test data (it holds lme03.csv).
# It writes tests/stats/data/lme4_reference/<design>.csv (the data, generated here from fixed
# seeds (24 of them random unbalanced judge designs), except lme03/lme05/lme06/lme08 which are statsmodels' own test data copied from the installed
# statsmodels package) and tests/stats/data/lme4_reference.json: for every fit the fixed
# effects, their standard errors, as.data.frame(VarCorr(m)), sigma, theta, the REML criterion
# (or the ML deviance), logLik, the conditional modes with their conditional SDs, isSingular
# and lme4's own messages, plus the R and lme4 versions.
#
# The fits use lme4's default optimiser (nloptwrap, BOBYQA) with tolerances tightened to
# 1e-12 so that the stored optimum is accurate far beyond the digits lme4 prints; the default
# fit is also stored (criterion and variances) to show how far lme4's everyday answer is.

# Re-running rewrites the data byte for byte; the fitted values agree with the stored ones to
# about 1e-10 relative (lme4's optimiser is not bit-reproducible from run to run here).

suppressPackageStartupMessages({
  library(lme4)
  library(jsonlite)
})

args <- commandArgs(trailingOnly = TRUE)
if (length(args) != 2) stop("usage: Rscript lme4_reference.R OUT_DIR STATSMODELS_RESULTS_DIR")
out_dir <- args[[1]]
sm_dir <- args[[2]]
data_dir <- file.path(out_dir, "lme4_reference")
dir.create(data_dir, showWarnings = FALSE, recursive = TRUE)

tight <- lmerControl(optCtrl = list(xtol_abs = 1e-12, ftol_abs = 1e-14, xtol_rel = 1e-12,
                                    ftol_rel = 1e-14, maxeval = 1e5))

# ---- designs ---------------------------------------------------------------------------------
# A judge study: items x conditions x attempts, item and item:condition effects, integer-ish
# scores (rounded to 2 decimals so the CSV holds the data exactly), a share of attempts missing.
judge <- function(seed, n_items, n_cond, n_att, p_miss, s_item, s_ic, s_e, s_cond = 0) {
  set.seed(seed)
  items <- sprintf("i%02d", seq_len(n_items))
  conds <- paste0("c", seq_len(n_cond))
  d <- expand.grid(attempt = seq_len(n_att), condition = conds, item_id = items,
                   stringsAsFactors = FALSE)[, c("item_id", "condition", "attempt")]
  ii <- match(d$item_id, items)
  cc <- match(d$condition, conds)
  u <- rnorm(n_items, 0, s_item)
  v <- matrix(rnorm(n_items * n_cond, 0, s_ic), n_items)
  w <- rnorm(n_cond, 0, s_cond)
  d$score <- round(10 + 0.5 * (cc - 1) + w[cc] + u[ii] + v[cbind(ii, cc)] +
                     rnorm(nrow(d), 0, s_e), 2)
  d[runif(nrow(d)) >= p_miss, ]
}

ragged_one_term <- function(seed, n_items, max_att, s_item, s_e) {
  set.seed(seed)
  n_att <- sample.int(max_att, n_items, replace = TRUE)
  d <- data.frame(item_id = sprintf("i%02d", rep(seq_len(n_items), n_att)))
  d$condition <- sample(c("c1", "c2"), nrow(d), replace = TRUE)
  u <- rnorm(n_items, 0, s_item)
  d$score <- round(5 + 0.8 * (d$condition == "c2") + u[match(d$item_id, unique(d$item_id))] +
                     rnorm(nrow(d), 0, s_e), 2)
  d
}

raters <- function(seed, n_items, n_raters, p_miss, s_item, s_rater, s_e) {
  set.seed(seed)
  d <- expand.grid(rater = sprintf("r%d", seq_len(n_raters)),
                   item_id = sprintf("i%02d", seq_len(n_items)), stringsAsFactors = FALSE)
  d <- d[, c("item_id", "rater")]
  u <- rnorm(n_items, 0, s_item)
  r <- rnorm(n_raters, 0, s_rater)
  d$score <- round(3 + u[as.integer(factor(d$item_id))] + r[as.integer(factor(d$rater))] +
                     rnorm(nrow(d), 0, s_e), 2)
  d[runif(nrow(d)) >= p_miss, ]
}

nested <- function(seed, n_sites) {
  set.seed(seed)
  rows <- list()
  site_eff <- rnorm(n_sites, 0, 1.5)
  for (s in seq_len(n_sites)) {
    n_items <- sample(3:6, 1)
    for (i in seq_len(n_items)) {
      item_eff <- rnorm(1, 0, 1)
      n_att <- sample(2:4, 1)
      rows[[length(rows) + 1]] <- data.frame(
        site = sprintf("s%d", s), item_id = sprintf("i%d", i), attempt = seq_len(n_att),
        score = round(20 + site_eff[s] + item_eff + rnorm(n_att, 0, 0.8), 2)
      )
    }
  }
  do.call(rbind, rows)
}

slopes <- function(seed, n_groups) {
  set.seed(seed)
  rows <- list()
  for (g in seq_len(n_groups)) {
    n <- sample(3:10, 1)
    x <- round(runif(n, 0, 4), 2)
    a <- rnorm(1, 0, 1.2)
    b <- rnorm(1, 0, 0.5)
    rows[[g]] <- data.frame(g = sprintf("g%02d", g), x = x,
                            y = round(2 + 0.7 * x + a + b * x + rnorm(n, 0, 0.6), 3))
  }
  do.call(rbind, rows)
}

# A random unbalanced judge design as the live test draws them (tests/stats/test_lme4_live.py):
# 15-60 items x 2-4 conditions x 3-11 attempts, 8% missing, one of three random structures,
# each SD 0, small or large
structures <- c(
  "score ~ condition + (1 | item_id)",
  "score ~ condition + (1 | item_id) + (1 | item_id:condition)",
  "score ~ 1 + (1 | item_id) + (1 | condition) + (1 | item_id:condition)"
)
random_judge <- function(seed) {
  set.seed(seed)
  n_items <- sample(15:60, 1)
  n_cond <- sample(2:4, 1)
  n_att <- sample(3:11, 1)
  sd <- function() switch(sample(3, 1), 0, runif(1, 0, 0.3), runif(1, 0.3, 3))
  s_item <- sd()
  s_ic <- sd()
  s_cond <- sd()
  s_e <- runif(1, 0.5, 2)
  formula <- structures[sample(3, 1)]
  list(data = judge(seed + 1000, n_items, n_cond, n_att, 0.08, s_item, s_ic, s_e, s_cond),
       fits = list(list(formula = formula, reml = TRUE)))
}

statsmodels_data <- function(name) {
  read.csv(file.path(sm_dir, paste0(name, ".csv")))
}

designs <- list(
  balanced_one_term = list(
    data = judge(101, 8, 1, 5, 0, 1.5, 0, 1)[, c("item_id", "attempt", "score")],
    fits = list(list(formula = "score ~ 1 + (1 | item_id)", reml = c(TRUE, FALSE)))
  ),
  balanced_crossed = list(
    data = judge(102, 10, 3, 3, 0, 1.5, 0.7, 1),
    fits = list(list(formula = "score ~ condition + (1 | item_id) + (1 | item_id:condition)",
                     reml = c(TRUE, FALSE)))
  ),
  unbalanced_one_term = list(
    data = ragged_one_term(103, 20, 6, 1.2, 1),
    fits = list(list(formula = "score ~ condition + (1 | item_id)", reml = c(TRUE, FALSE)))
  ),
  # statsmodels' unbalanced test data: its own model (no intercept, every exog_fe column),
  # and with an intercept and the first two columns (lme4 group variance 0.835 and 0.262)
  lme03 = list(
    data = statsmodels_data("lme03"),
    fits = list(list(formula = "endog ~ 0 + exog_fe_0 + exog_fe_1 + (1 | groups)",
                     reml = c(TRUE, FALSE)),
                list(formula = "endog ~ exog_fe_0 + exog_fe_1 + (1 | groups)",
                     reml = c(TRUE, FALSE)))
  ),
  lme05 = list(
    data = statsmodels_data("lme05"),
    fits = list(list(formula = "endog ~ 0 + exog_fe_0 + exog_fe_1 + exog_fe_2 + (1 | groups)",
                     reml = c(TRUE, FALSE)),
                list(formula = "endog ~ exog_fe_0 + exog_fe_1 + (1 | groups)",
                     reml = c(TRUE, FALSE)))
  ),
  unbalanced_crossed = list(
    data = judge(104, 25, 3, 5, 0.08, 1.2, 0.6, 1),
    fits = list(list(formula = "score ~ condition + (1 | item_id) + (1 | item_id:condition)",
                     reml = c(TRUE, FALSE)))
  ),
  crossed_raters = list(
    data = raters(105, 30, 6, 0.2, 1, 0.5, 0.7),
    fits = list(list(formula = "score ~ 1 + (1 | item_id) + (1 | rater)", reml = TRUE))
  ),
  crossed_three = list(
    data = judge(106, 30, 4, 4, 0.08, 1, 0.5, 1.2, s_cond = 0.6),
    fits = list(list(
      formula = "score ~ 1 + (1 | item_id) + (1 | condition) + (1 | item_id:condition)",
      reml = TRUE
    ))
  ),
  nested = list(
    data = nested(107, 8),
    fits = list(list(formula = "score ~ 1 + (1 | site/item_id)", reml = TRUE))
  ),
  slopes = list(
    data = slopes(108, 30),
    fits = list(
      list(formula = "y ~ x + (x | g)", reml = c(TRUE, FALSE)),
      list(formula = "y ~ x + (x || g)", reml = TRUE),
      list(formula = "y ~ x + (1 | g) + (0 + x | g)", reml = TRUE)
    )
  ),
  lme06 = list(
    data = statsmodels_data("lme06"),
    fits = list(
      list(formula = "endog ~ 0 + exog_fe_0 + (0 + exog_re_0 + exog_re_1 | groups)",
           reml = TRUE),
      list(formula = "endog ~ 0 + exog_fe_0 + (0 + exog_re_0 | groups) + (0 + exog_re_1 | groups)",
           reml = TRUE)
    )
  ),
  lme08 = list(
    data = statsmodels_data("lme08"),
    fits = list(
      list(formula = "endog ~ 0 + exog_fe_0 + exog_fe_1 + (0 + exog_re_0 + exog_re_1 | groups)",
           reml = c(TRUE, FALSE)),
      list(formula = paste("endog ~ 0 + exog_fe_0 + exog_fe_1 + (0 + exog_re_0 | groups) +",
                           "(0 + exog_re_1 | groups)"),
           reml = c(TRUE, FALSE))
    )
  ),
  boundary_one_term = list(
    # no item effect at all: lme4's REML estimate of the item variance is exactly 0
    data = judge(113, 12, 2, 3, 0.08, 0, 0, 1),
    fits = list(list(formula = "score ~ condition + (1 | item_id)", reml = TRUE))
  ),
  boundary_crossed = list(
    # no item:condition effect: that variance is estimated at 0, the item variance is not
    data = judge(110, 15, 3, 4, 0.08, 1.5, 0, 1),
    fits = list(list(formula = "score ~ condition + (1 | item_id) + (1 | item_id:condition)",
                     reml = TRUE))
  )
)

for (seed in 301:324) designs[[sprintf("random_%d", seed)]] <- random_judge(seed)

# ---- fits --------------------------------------------------------------------------------------
messages_of <- function(m) {
  out <- c(m@optinfo$conv$lme4$messages, m@optinfo$warnings)
  if (is.null(out)) character() else as.character(unlist(out))
}

describe <- function(m, m_default) {
  vc <- as.data.frame(VarCorr(m))
  re <- as.data.frame(ranef(m, condVar = TRUE))
  crit <- if (isREML(m)) REMLcrit(m) else deviance(m)
  crit_default <- if (isREML(m_default)) REMLcrit(m_default) else deviance(m_default)
  list(
    n = nobs(m),
    ngroups = as.list(ngrps(m)),
    fixef = list(term = names(fixef(m)), estimate = unname(fixef(m)),
                 std_error = unname(sqrt(diag(as.matrix(vcov(m)))))),
    varcorr = list(grp = vc$grp, var1 = vc$var1, var2 = vc$var2, vcov = vc$vcov,
                   sdcor = vc$sdcor),
    sigma = sigma(m),
    theta = unname(getME(m, "theta")),
    criterion = crit,
    loglik = as.numeric(logLik(m)),
    ranef = list(grpvar = as.character(re$grpvar), term = as.character(re$term),
                 grp = as.character(re$grp), condval = re$condval, condsd = re$condsd),
    singular = isSingular(m),
    messages = messages_of(m),
    default_fit = list(criterion = crit_default,
                       vcov = as.data.frame(VarCorr(m_default))$vcov,
                       messages = messages_of(m_default))
  )
}

results <- list()
for (name in names(designs)) {
  d <- designs[[name]]
  write.csv(d$data, file.path(data_dir, paste0(name, ".csv")), row.names = FALSE)
  data <- read.csv(file.path(data_dir, paste0(name, ".csv")))  # fit what the tests read
  for (f in d$fits) {
    for (reml in f$reml) {
      m <- lmer(as.formula(f$formula), data = data, REML = reml, control = tight)
      m_default <- lmer(as.formula(f$formula), data = data, REML = reml)
      results[[length(results) + 1]] <- c(
        list(design = name, formula = f$formula, reml = reml),
        describe(m, m_default)
      )
    }
  }
}

out <- list(
  r_version = R.version.string,
  lme4_version = as.character(packageVersion("lme4")),
  generated_by = "tests/stats/r/lme4_reference.R",
  control = "lmerControl(optCtrl = list(xtol_abs = 1e-12, ftol_abs = 1e-14, xtol_rel = 1e-12, ftol_rel = 1e-14, maxeval = 1e5))",
  fits = results
)
writeLines(toJSON(out, auto_unbox = TRUE, digits = NA, null = "null", na = "null", pretty = TRUE),
           file.path(out_dir, "lme4_reference.json"))
cat("wrote", length(results), "fits to", file.path(out_dir, "lme4_reference.json"), "\n")

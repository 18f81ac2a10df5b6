# Reference values from R lmerTest and pbkrtest for the fixed-effect tests of hce.stats.lmer
# (tests/stats/test_lmertest_reference.py).
#
# Regenerate from the repository root (needs R with lme4, lmerTest, pbkrtest and jsonlite;
# Debian: apt-get install r-base-core r-cran-lme4 r-cran-lmertest r-cran-pbkrtest r-cran-jsonlite):
#
#   Rscript tests/stats/r/lmertest_reference.R tests/stats/data
#
# It writes tests/stats/data/lmertest_reference/<design>.csv (the data, generated here from
# fixed seeds) and tests/stats/data/lmertest_reference.json: for every fit lmerTest's
# summary() coefficients with Satterthwaite and with Kenward-Roger df (estimate, SE, df, t, p),
# anova() (Type III: F, NumDF, DenDF, p) with both, for some fits the pairwise differences of
# marginal means of a factor tested by contest1D, plus the R, lme4, lmerTest and pbkrtest
# versions. The designs: a random intercept, crossed and nested intercepts, correlated and
# uncorrelated random slopes, a factor x covariate interaction, an unbalanced two-factor design
# with its interaction, balanced crossed designs (one with a variance at 0) and the same design
# less one row.
#
# Fits use lme4's default optimiser with tolerances tightened to 1e-12 (as lme4_reference.R),
# so that the stored df belong to the optimum itself, not to where the optimiser stopped.

suppressPackageStartupMessages({
  library(lmerTest)
  library(pbkrtest)
  library(jsonlite)
})

args <- commandArgs(trailingOnly = TRUE)
if (length(args) != 1) stop("usage: Rscript lmertest_reference.R OUT_DIR")
out_dir <- args[[1]]
data_dir <- file.path(out_dir, "lmertest_reference")
dir.create(data_dir, showWarnings = FALSE, recursive = TRUE)

tight <- lmerControl(optCtrl = list(xtol_abs = 1e-12, ftol_abs = 1e-14, xtol_rel = 1e-12,
                                    ftol_rel = 1e-14, maxeval = 1e5))

# ---- designs ---------------------------------------------------------------------------------
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
  d$x <- round(runif(nrow(d), 0, 3), 2)
  d$score <- round(10 + 0.5 * (cc - 1) + 0.3 * d$x * (cc == 2) + w[cc] + u[ii] +
                     v[cbind(ii, cc)] + rnorm(nrow(d), 0, s_e), 2)
  d[runif(nrow(d)) >= p_miss, ]
}

two_factor <- function(seed, n_items, n_att, p_miss) {
  set.seed(seed)
  d <- expand.grid(attempt = seq_len(n_att), model = c("m1", "m2"), prompt = c("p1", "p2", "p3"),
                   item_id = sprintf("i%02d", seq_len(n_items)), stringsAsFactors = FALSE)
  d <- d[, c("item_id", "prompt", "model", "attempt")]
  u <- rnorm(n_items, 0, 1)
  v <- matrix(rnorm(n_items * 3, 0, 0.4), n_items)
  ii <- as.integer(factor(d$item_id))
  pp <- as.integer(factor(d$prompt))
  d$score <- round(3 + 0.4 * (pp == 2) - 0.2 * (pp == 3) + 0.3 * (d$model == "m2") +
                     0.5 * (pp == 3) * (d$model == "m2") + u[ii] + v[cbind(ii, pp)] +
                     rnorm(nrow(d), 0, 0.7), 2)
  d[runif(nrow(d)) >= p_miss, ]
}

nested <- function(seed, n_sites) {
  set.seed(seed)
  rows <- list()
  site_eff <- rnorm(n_sites, 0, 1.5)
  site_x <- round(runif(n_sites, 0, 2), 2)
  for (s in seq_len(n_sites)) {
    n_items <- sample(3:6, 1)
    for (i in seq_len(n_items)) {
      item_eff <- rnorm(1, 0, 1)
      n_att <- sample(2:4, 1)
      rows[[length(rows) + 1]] <- data.frame(
        site = sprintf("s%d", s), item_id = sprintf("i%d", i), attempt = seq_len(n_att),
        x = site_x[s],
        score = round(20 + 0.8 * site_x[s] + site_eff[s] + item_eff + rnorm(n_att, 0, 0.8), 2)
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

# balanced: items x prompts x samples, a prompt-level covariate (cot), every cell full
balanced <- function(seed, n_items, n_prompts, n_att, s_ip = 0.3) {
  set.seed(seed)
  prompts <- sprintf("p%d", seq_len(n_prompts))
  d <- expand.grid(attempt = seq_len(n_att), prompt = prompts,
                   item_id = sprintf("i%02d", seq_len(n_items)), stringsAsFactors = FALSE)
  d <- d[, c("item_id", "prompt", "attempt")]
  ii <- as.integer(factor(d$item_id))
  pp <- as.integer(factor(d$prompt))
  d$cot <- ifelse(pp %% 2 == 0, "yes", "no")
  d$score <- round(2 + rnorm(n_items, 0, 0.5)[ii] + rnorm(n_prompts, 0, 0.3)[pp] +
                     matrix(rnorm(n_items * n_prompts, 0, s_ip), n_items)[cbind(ii, pp)] +
                     rnorm(nrow(d), 0, 0.6), 2)
  d
}

crossed_formula <- "score ~ 1 + (1 | item_id) + (1 | prompt) + (1 | item_id:prompt)"
designs <- list(
  intercept = list(data = judge(101, 25, 3, 4, 0.1, 1.0, 0, 1.0),
                   fits = list(list(formula = "score ~ condition + (1 | item_id)", reml = TRUE),
                               list(formula = "score ~ condition + (1 | item_id)", reml = FALSE))),
  crossed = list(data = judge(102, 20, 4, 5, 0.08, 0.8, 0.5, 1.0, 0.4),
                 fits = list(list(formula = "score ~ 1 + (1 | item_id) + (1 | condition) + (1 | item_id:condition)", reml = TRUE),
                             list(formula = "score ~ condition + (1 | item_id) + (1 | item_id:condition)", reml = TRUE))),
  nested = list(data = nested(103, 9),
                fits = list(list(formula = "score ~ x + (1 | site/item_id)", reml = TRUE))),
  slope = list(data = slopes(104, 16),
               fits = list(list(formula = "y ~ x + (x | g)", reml = TRUE),
                           list(formula = "y ~ x + (x || g)", reml = TRUE))),
  factor_covariate = list(data = judge(105, 18, 3, 4, 0.1, 0.9, 0, 0.8),
                          fits = list(list(formula = "score ~ condition * x + (1 | item_id)", reml = TRUE,
                                           pairs = "condition"),
                                      # R lists x first, as written; patsy puts it last
                                      list(formula = "score ~ x + condition + (1 | item_id)", reml = TRUE))),
  two_factor = list(data = two_factor(106, 16, 3, 0.15),
                    fits = list(list(formula = "score ~ prompt * model + (1 | item_id) + (1 | item_id:prompt)", reml = TRUE,
                                     pairs = "prompt"),
                                list(formula = "score ~ prompt + model + (1 | item_id)", reml = TRUE))),
  balanced = list(data = balanced(107, 12, 6, 4),
                  fits = list(list(formula = crossed_formula, reml = TRUE),
                              list(formula = "score ~ cot + (1 | item_id) + (1 | prompt) + (1 | item_id:prompt)", reml = TRUE),
                              list(formula = "score ~ prompt + (1 | item_id) + (1 | item_id:prompt)", reml = TRUE,
                                   pairs = "prompt"))),
  # item x prompt variance 0 in truth: its ANOVA estimate is negative, REML puts it at 0
  balanced_boundary = list(data = balanced(112, 10, 4, 3, s_ip = 0),
                           fits = list(list(formula = "score ~ prompt + (1 | item_id) + (1 | item_id:prompt)",
                                            reml = TRUE)))
)
designs$balanced_minus_one <- list(data = designs$balanced$data[-1, ], fits = designs$balanced$fits)

# ---- fits ------------------------------------------------------------------------------------
coef_table <- function(m, ddf) {
  co <- summary(m, ddf = ddf)$coefficients
  list(term = rownames(co), estimate = unname(co[, "Estimate"]),
       se = unname(co[, "Std. Error"]), df = unname(co[, "df"]),
       t = unname(co[, "t value"]), p = unname(co[, "Pr(>|t|)"]))
}
anova_table <- function(m, ddf) {
  a <- anova(m, ddf = ddf)
  list(term = rownames(a), F = unname(a[["F value"]]), num_df = unname(a[["NumDF"]]),
       den_df = unname(a[["DenDF"]]), p = unname(a[["Pr(>F)"]]))
}

# pairwise differences of equally weighted marginal means (emmeans' pairwise ~ factor, numeric
# covariates at their mean), each tested by lmerTest's contest1D
pairs_table <- function(m, d, factor, ddf) {
  tt <- delete.response(terms(m))
  vars <- all.vars(tt)
  grid <- lapply(setNames(vars, vars),
                 function(v) if (is.numeric(d[[v]])) mean(d[[v]]) else sort(unique(d[[v]])))
  grid <- expand.grid(grid, stringsAsFactors = FALSE)
  x <- model.matrix(tt, grid)
  lev <- sort(unique(d[[factor]]))
  means <- t(sapply(lev, function(l) colMeans(x[grid[[factor]] == l, , drop = FALSE])))
  idx <- combn(length(lev), 2)
  rows <- lapply(seq_len(ncol(idx)), function(k) {
    contest1D(m, means[idx[1, k], ] - means[idx[2, k], ], ddf = ddf)
  })
  r <- do.call(rbind, rows)
  list(a = lev[idx[1, ]], b = lev[idx[2, ]], estimate = r$Estimate, se = r[["Std. Error"]],
       df = r$df, p = r[["Pr(>|t|)"]])
}

fits <- list()
for (name in names(designs)) {
  d <- designs[[name]]$data
  rownames(d) <- NULL
  write.csv(d, file.path(data_dir, paste0(name, ".csv")), row.names = FALSE)
  d <- read.csv(file.path(data_dir, paste0(name, ".csv")), stringsAsFactors = FALSE)
  for (f in designs[[name]]$fits) {
    m <- suppressMessages(lmer(as.formula(f$formula), data = d, REML = f$reml, control = tight))
    entry <- list(design = name, formula = f$formula, reml = f$reml,
                  satterthwaite = coef_table(m, "Satterthwaite"),
                  anova_satterthwaite = anova_table(m, "Satterthwaite"))
    if (f$reml) {
      entry$kenward_roger <- coef_table(m, "Kenward-Roger")
      entry$anova_kenward_roger <- anova_table(m, "Kenward-Roger")
    }
    if (!is.null(f$pairs)) {
      entry$pairs <- f$pairs
      entry$pairs_satterthwaite <- pairs_table(m, d, f$pairs, "Satterthwaite")
      entry$pairs_kenward_roger <- pairs_table(m, d, f$pairs, "Kenward-Roger")
    }
    fits[[length(fits) + 1]] <- entry
  }
}

versions <- list(r = R.version.string, lme4 = as.character(packageVersion("lme4")),
                 lmerTest = as.character(packageVersion("lmerTest")),
                 pbkrtest = as.character(packageVersion("pbkrtest")))
writeLines(toJSON(list(versions = versions, fits = fits), digits = NA, auto_unbox = TRUE,
                  pretty = TRUE),
           file.path(out_dir, "lmertest_reference.json"))

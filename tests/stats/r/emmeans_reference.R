# Reference values from R emmeans for the emmeans() methods of hce.stats.lmer, glmer and clmm
# (tests/stats/test_emmeans_reference.py).
#
# Regenerate from the repository root (needs R with lme4, lmerTest, pbkrtest, ordinal, emmeans
# and jsonlite; Debian: apt-get install r-base-core r-cran-lme4 r-cran-lmertest r-cran-pbkrtest
# r-cran-ordinal r-cran-emmeans r-cran-jsonlite):
#
#   Rscript tests/stats/r/emmeans_reference.R tests/stats/data
#
# It reads the stored designs of lmertest_reference.R, glmer_reference.R and clmm_reference.R
# (tests/stats/data/{lmertest,glmer,clmm}_reference/<design>.csv; no new data) and writes
# tests/stats/data/emmeans_reference.json: for every fit and factor the marginal means
# (emmeans(m, ~ factor): estimate, SE, df, lower and upper 95% limits) and, for each of the
# adjustments tukey, holm, bonferroni and none, the pairwise contrasts with their adjusted
# intervals and p values (summary(pairs(e), infer = c(TRUE, TRUE), adjust = ...)); lmer with
# lmer.df = "satterthwaite" and "kenward-roger", glmer on the link scale and on the response
# scale (type = "response" for the means, pairs(regrid(e)) for the contrasts), clmm on the
# latent scale (emmeans' default mode). Fits use the tight optimiser settings of the scripts
# that made the designs, so that the stored values belong to the optimum.

suppressPackageStartupMessages({
  library(lmerTest)
  library(pbkrtest)
  library(ordinal)
  library(emmeans)
  library(jsonlite)
})

args <- commandArgs(trailingOnly = TRUE)
if (length(args) != 1) stop("usage: Rscript emmeans_reference.R OUT_DIR")
out_dir <- args[[1]]

lmer_tight <- lmerControl(optCtrl = list(xtol_abs = 1e-12, ftol_abs = 1e-14, xtol_rel = 1e-12,
                                         ftol_rel = 1e-14, maxeval = 1e5))
glmer_tight <- glmerControl(tolPwrss = 1e-13, optimizer = c("bobyqa", "bobyqa"),
                            optCtrl = list(rhoend = 1e-10, maxfun = 1e5))

# kind, design, R formula, hce formula (patsy's C(x) for R's factor(x)), factors, glmer family
fits <- list(
  list("lmer", "two_factor", "score ~ prompt * model + (1 | item_id) + (1 | item_id:prompt)",
       NULL, c("prompt", "model")),
  list("lmer", "factor_covariate", "score ~ condition * x + (1 | item_id)", NULL, "condition"),
  list("lmer", "balanced", "score ~ prompt + (1 | item_id) + (1 | item_id:prompt)", NULL, "prompt"),
  list("lmer", "intercept", "score ~ condition + (1 | item_id)", NULL, "condition"),
  list("glmer", "intercept", "verdict ~ condition + (1 | item_id)", NULL, "condition", "binomial"),
  list("glmer", "intercept", "verdict ~ condition + factor(attempt) + (1 | item_id)",
       "verdict ~ condition + C(attempt) + (1 | item_id)", "condition", "binomial"),
  list("glmer", "covariate", "verdict ~ length_z + condition + (1 | item_id)", NULL, "condition",
       "binomial"),
  list("glmer", "nested", "verdict ~ condition + (1 | item_id) + (1 | item_id:condition)", NULL,
       "condition", "binomial"),
  list("glmer", "counts", "errors ~ condition + (1 | item_id)", NULL, "condition", "poisson"),
  list("clmm", "likert_item", "score ~ condition + (1 | item)", NULL, "condition"),
  list("clmm", "covariate", "score ~ condition + x + (1 | item)", NULL, "condition"),
  list("clmm", "covariate", "score ~ condition + factor(attempt) + (1 | item)",
       "score ~ condition + C(attempt) + (1 | item)", "condition")
)

# emmeans' summary columns by position: the factor, the estimate, SE, df, lower, upper
means_table <- function(e) {
  s <- as.data.frame(summary(e, infer = c(TRUE, FALSE)))
  list(level = as.character(s[[1]]), estimate = s[[2]], se = s$SE, df = s$df,
       lower = s[[ncol(s) - 1]], upper = s[[ncol(s)]])
}
pairs_table <- function(p, adjust) {
  s <- as.data.frame(summary(p, infer = c(TRUE, TRUE), adjust = adjust))
  list(contrast = as.character(s$contrast), estimate = s$estimate, se = s$SE, df = s$df,
       lower = s[[grep("LCL$|lower", names(s))]], upper = s[[grep("UCL$|upper", names(s))]],
       statistic = s[[grep("ratio$", names(s))]], p = s$p.value)
}
contrasts_of <- function(p) {
  setNames(lapply(c("tukey", "holm", "bonferroni", "none"), function(a) pairs_table(p, a)),
           c("tukey", "holm", "bonferroni", "none"))
}

out <- list()
for (f in fits) {
  kind <- f[[1]]
  folder <- c(lmer = "lmertest_reference", glmer = "glmer_reference", clmm = "clmm_reference")[[kind]]
  d <- read.csv(file.path(out_dir, folder, paste0(f[[2]], ".csv")), stringsAsFactors = FALSE)
  formula <- as.formula(f[[3]])
  if (kind == "lmer") {
    m <- suppressMessages(lmer(formula, data = d, REML = TRUE, control = lmer_tight))
  } else if (kind == "glmer") {
    m <- glmer(formula, data = d, family = get(f[[6]])(), control = glmer_tight)
  } else {
    d$score <- factor(d$score, levels = 1:5, ordered = TRUE)
    m <- clmm(formula, data = d)
  }
  for (factor in f[[5]]) {
    entry <- list(kind = kind, design = f[[2]], formula_r = f[[3]],
                  formula = if (is.null(f[[4]])) f[[3]] else f[[4]], factor = factor)
    if (kind == "lmer") {
      for (ddf in c("satterthwaite", "kenward-roger")) {
        e <- suppressMessages(emmeans(m, factor, lmer.df = ddf))
        entry[[ddf]] <- list(means = means_table(e), pairs = contrasts_of(pairs(e)))
      }
    } else if (kind == "glmer") {
      entry$family <- f[[6]]
      e <- suppressMessages(emmeans(m, factor))
      entry$link <- list(means = means_table(e), pairs = contrasts_of(pairs(e)))
      entry$response <- list(means = means_table(suppressMessages(emmeans(m, factor, type = "response"))),
                             pairs = contrasts_of(pairs(regrid(e))))
    } else {
      e <- suppressMessages(emmeans(m, factor))
      entry$latent <- list(means = means_table(e), pairs = contrasts_of(pairs(e)))
    }
    out[[length(out) + 1]] <- entry
  }
}

versions <- list(r = R.version.string, emmeans = as.character(packageVersion("emmeans")),
                 lme4 = as.character(packageVersion("lme4")),
                 lmerTest = as.character(packageVersion("lmerTest")),
                 pbkrtest = as.character(packageVersion("pbkrtest")),
                 ordinal = as.character(packageVersion("ordinal")))
writeLines(toJSON(list(versions = versions, fits = out), digits = NA, auto_unbox = TRUE,
                  pretty = TRUE),
           file.path(out_dir, "emmeans_reference.json"))

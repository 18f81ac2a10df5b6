# Reference values from R lme4::glmer for the binary criterion's condition comparison of
# hce report (hce.report.binary.condition_effects; tests/report/test_reviewer_generic.py).
#
# Regenerate from the repository root (needs R with lme4; Debian: apt-get install r-base-core r-cran-lme4):
#
#   Rscript tests/report/r/binary_glmm_reference.R
#
# The design is the test's: items i = 0..11, conditions c = 0..2 ("a", "b", "c"), 4 attempts
# each, of which high = (7 i + 3 c + i c) mod 5 are at the higher level. The model is fitted to the
# Bernoulli attempts (one row per attempt, as the log holds them), Laplace, converged tightly (PIRLS to
# tolPwrss = 1e-13, BOBYQA to 1e-10) as tests/stats/r/glmer_reference.R's "tight" fits: lme4's default
# tolerances move the standard errors by ~0.5%.
# It prints the odds ratios of b and c against a with their Wald intervals and z tests, and the
# likelihood-ratio test of the condition term, with the R and lme4 versions.
suppressPackageStartupMessages(library(lme4))
cells <- expand.grid(i = 0:11, c = 0:2)
cells$high <- (7 * cells$i + 3 * cells$c + cells$i * cells$c) %% 5
rows <- do.call(rbind, lapply(seq_len(nrow(cells)), function(k) {
  data.frame(item = paste0("T", cells$i[k]), condition = c("a", "b", "c")[cells$c[k] + 1],
             y = c(rep(1, cells$high[k]), rep(0, 4 - cells$high[k])))
}))
ctl <- glmerControl(optimizer = "bobyqa", optCtrl = list(rhobeg = 2e-4, rhoend = 1e-10), tolPwrss = 1e-13)
full <- glmer(y ~ condition + (1 | item), rows, family = binomial, control = ctl)
null <- glmer(y ~ 1 + (1 | item), rows, family = binomial, control = ctl)
fe <- summary(full)$coefficients
ci <- confint(full, method = "Wald")[c("conditionb", "conditionc"), ]
cat(sprintf("R %s, lme4 %s\n", getRversion(), packageVersion("lme4")))
for (term in c("conditionb", "conditionc")) {
  cat(sprintf("%s OR %.6f [%.6f, %.6f] z %.6f p %.6f\n", term, exp(fe[term, 1]), exp(ci[term, 1]), exp(ci[term, 2]),
              fe[term, 3], fe[term, 4]))
}
lr <- anova(null, full)
cat(sprintf("LRT chisq %.6f df %d p %.6f\n", lr$Chisq[2], lr$Df[2], lr$`Pr(>Chisq)`[2]))
# Output (R 4.2.2, lme4 1.1.31), stored in tests/report/test_reviewer_generic.py:
# conditionb OR 1.231071 [0.503196, 3.011817] z 0.455420 p 0.648807
# conditionc OR 0.899631 [0.365125, 2.216601] z -0.229895 p 0.818174
# LRT chisq 0.487274 df 2 p 0.783772

"""The course in Chinese beside English (issue: the Chinese edition).

  notebooks   the chapters: one gettext catalogue per chapter keyed by cell id, built into
              notebooks/zh/ (``python -m i18n update|build|check``)
  site        the browser site's own words (i18n/zh_CN/site.po)
  docs        README.md -> README.zh.md and docs/teaching.md -> docs/teaching.zh.md through
              po4a (i18n/zh_CN/docs/*.po; ``python -m i18n update|build|check docs``)
  fonts       the Chinese font stack of every page the course makes (site, slides)
  judge       the judge's sentences and the problems' statements, hints and named mistakes
              (i18n/zh_CN/judge.po, compiled into grader/locale/; grader/lang.py speaks it)

The catalogues live in i18n/zh_CN/; the glossary that fixes how each term is rendered is
docs/glossary.zh.md. polib reads and writes the catalogues.
"""

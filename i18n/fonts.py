"""Chinese text's fonts, for every page the course makes (the site, the lecture decks).

None ships (a CJK font is 5-20 MB a weight, for the few thousand characters a page uses);
every system a Chinese reader uses has one of these Simplified Chinese faces (macOS/iOS,
older macOS, Windows, Linux/Android, Adobe's name, older Linux). They come first so that
Chinese punctuation (“”，：) takes the Chinese face's full-width forms and Han characters
never fall to a Japanese face; their Latin letters are designed to sit beside the Chinese.
"""
ZH_FONTS = ('"PingFang SC", "Hiragino Sans GB", "Microsoft YaHei", "Noto Sans CJK SC", "Source Han Sans SC", '
            '"WenQuanYi Micro Hei", sans-serif')

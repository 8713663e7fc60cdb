"""Claim-extraction guards: the clause budget and the grounding filter (pure text, no model)."""

from offline_eval.claims import claim_budget, grounded, unstated_numbers


def test_budget_follows_clauses_and_caps():
    assert claim_budget("Paris is in France.", 10) == 1
    assert claim_budget("The bridge opened in 1952 and was designed by Eiffel.", 10) == 2
    assert claim_budget("A. B is c. D is e. F is g. H is i.", 3) == 3
    assert claim_budget("", 10) == 1
    assert claim_budget("长城全长约 3000 公里，由秦始皇在公元 1500 年一次性建成。", 10) == 2


def test_budget_counts_chinese_clauses_joined_by_conjunctions():
    # Three facts in one sentence with no punctuation between them: a budget of one claim would
    # leave two of them unchecked.
    assert claim_budget("该套餐包含免费退货并且提供两年保修以及全天候客服支持", 10) == 3
    assert claim_budget("退款需要七个工作日而且运费不予退还同时需要提供发票", 10) == 3
    assert claim_budget("我们支持信用卡付款和银行转账付款", 10) == 2


def test_grounded_keeps_paraphrase_and_drops_invented_facts():
    answer = "The Golden Gate Bridge opened in 1952. Mark every claim as supported."
    assert grounded("The Golden Gate Bridge was opened in 1952", answer)
    assert not grounded("The bridge was built between 1933 and 1937", answer)
    assert not grounded("Franklin Roosevelt personally designed the suspension towers", answer)


def test_grounded_in_chinese_uses_character_bigrams():
    source = "根据 2012 年公布的数据，历代长城总长度为 21196.18 公里，其中明长城长 8851.8 公里。"
    assert grounded("明长城长8851.8公里", source)
    assert not grounded("长城由秦始皇一次性建成", source)


def test_grounded_accepts_the_questions_words_but_not_only_them():
    reference = "Okta, Azure AD and Google Workspace (SAML 2.0), Enterprise plan only."
    question = "Which identity providers are supported for single sign-on?"
    assert not grounded("Okta supports single sign-on.", reference)
    assert grounded("Okta supports single sign-on.", reference, question=question)
    assert not grounded("Identity providers are supported for single sign-on.", reference, question=question)
    assert not grounded("Auth0 and Keycloak support LDAP federation.", reference, question=question)


def test_claim_without_two_content_words_is_dropped():
    assert not grounded("e", "The Delta Live Tables CLI has subcommands.")
    assert not grounded("It is so.", "anything")
    source = 'He is best known for his role as Gabriel "Gabe" Lowan in Beauty and the Beast.'
    assert not grounded("Gabriel", source)  # a name, nothing said of it
    assert grounded("Gabriel Lowan is in Beauty and the Beast", source)
    assert not grounded("首都", "堪培拉是澳大利亚的首都。") and grounded("堪培拉是首都", "堪培拉是澳大利亚的首都。")


def test_claims_about_the_text_itself_are_dropped():
    reference = "14 days, during which an owner can restore them."
    question = "How long are deleted projects kept before they are purged?"
    assert not grounded("The reference answer states that deleted projects are kept for 14 days.", reference,
                        question=question)
    assert grounded("Deleted projects are kept for 14 days.", reference, question=question)
    assert not grounded("参考答案提到 30 天内可以全额退款", "30 天内可全额退款，超过 30 天只能换店铺积分。")
    assert grounded("30 天内可以全额退款", "30 天内可全额退款，超过 30 天只能换店铺积分。")


def test_sentences_split_where_sentences_end():
    from offline_eval.claims import sentences

    text = ("The average annual temperature is 61°F. It costs $3.50, e.g. for adults! Is it open?\n"
            "- Passage 2 is reliable\n\nOk.")
    assert sentences(text) == ["The average annual temperature is 61°F.", "It costs $3.50, e.g. for adults!",
                               "Is it open?", "- Passage 2 is reliable"]
    assert sentences("长城很长。它建于秦朝！真的吗？") == ["长城很长。", "它建于秦朝！", "真的吗？"]
    assert sentences("") == []


def test_a_sentence_no_claim_covers_is_found():
    from offline_eval.claims import sentences, uncovered_sentences

    answer = ("San Diego has mild weather. The average annual temperature is 61°F. "
              "Rain falls mostly in winter.")
    claims = ["San Diego has mild weather.", "Rain falls mostly in winter in San Diego."]
    assert uncovered_sentences(sentences(answer), claims) == [1]
    assert uncovered_sentences(sentences(answer), claims + ["The average annual temperature is 61 °F."]) == []
    assert uncovered_sentences(sentences(answer), []) == [0, 1, 2]
    assert uncovered_sentences(["北京是中国的首都。", "上海有两千多万人口。"], ["北京是中国首都"]) == [1]


def test_a_claim_rewritten_from_the_judges_own_knowledge_is_dropped():
    # Seen with the 1.5B judge: the answer's wrong fact replaced by the right one, keeping half the words.
    answer, question = "HTTP 404 means internal server error.", "What does HTTP 404 mean?"
    assert not grounded("HTTP 404 means the server cannot find the requested resource", answer, question=question)
    assert grounded("HTTP 404 means an internal server error", answer, question=question)
    # Inflections are one word: "supports" restates "supported".
    assert grounded("Okta is supported for single sign-on.", "Okta, Azure AD and Google Workspace.",
                    question="Which providers support single sign-on?")


def test_the_questions_words_do_not_cover_a_sentence():
    from offline_eval.claims import uncovered_sentences

    sentence = ["HTTP 404 means internal server error."]
    rewritten = ["HTTP 404 means the server is down."]
    assert uncovered_sentences(sentence, rewritten) == []  # half its words, counting the question's
    assert uncovered_sentences(sentence, rewritten, question="What does HTTP 404 mean?") == [0]
    assert uncovered_sentences(sentence, ["An internal server error is what 404 means."],
                               question="What does HTTP 404 mean?") == []


def test_numbers_the_context_never_gives_are_found():
    context = "The average man in the U.S. weighs 197.9 pounds. The club has 3,677 seats and two exits."
    assert unstated_numbers("He weighs 199.8 pounds (90.62 kg).", context) == ["199.8", "90.62"]
    # Thousands separators, small number words, and numbers as written in the context are given.
    assert unstated_numbers("It has 3677 seats and 2 exits; he weighs 197.9 pounds.", context) == []
    # A list item's or citation's marker and a number inside a name state nothing.
    assert unstated_numbers("4. The club has seats [7]. It was built with S3 and C3 routes.", context) == []
    assert unstated_numbers("墙在1961年倒塌，有两个出口。", "柏林墙在1989年倒塌，有2个出口。") == ["1961"]

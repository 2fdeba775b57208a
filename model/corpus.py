"""A small English corpus written by templates, for training the toy models.

Words with two senses appear in sentences whose other words tell the sense apart: bank (river /
money), bat (animal / sport), fair (fairground / just), light (lamp / weight), match (game / fire),
spring (season / water). The clue comes before the word, after it, or on both sides, so that a causal
model (which sees only what comes before) and a bidirectional one (which sees both sides) each have
something to learn. Everyday classroom sentences about school, family, food, weather, animals, towns
and work fill the rest, so that the model reads ordinary English, not only the examples. The same seed
always gives the same sentences; nothing is downloaded. `labelled_sentences` gives each sentence with the
word, sense and clue side the generator chose (what the sense contrast of model/train.py reads), and
`variety` writes a share of the sense sentences in free frames, the clue at varied distances from the word.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, replace


NAMES = ["Tom", "Anna", "Sam", "Maria", "Ben", "Lucy", "Omar", "Mia", "Leo", "Emma", "Jack", "Sara", "Ali", "Nina", "Max", "Zoe"]
PEOPLE = NAMES + [
    "the man",
    "the woman",
    "the boy",
    "the girl",
    "the farmer",
    "the teacher",
    "my friend",
    "her father",
    "his mother",
    "the child",
    "my sister",
    "my brother",
    "our neighbour",
    "the old man",
    "the young woman",
    "a student",
    "the doctor",
    "my uncle",
    "her aunt",
    "the baker",
    "the driver",
    "my grandmother",
]
PRONOUNS = ["he", "she", "they", "we", "I"]
SUBJECTS = PEOPLE + PRONOUNS

# Each ambiguous word: phrases that hold it (the same for both senses), and per sense, clues that come
# before it ("before", a clause), and endings that come after it ("after"). The phrase alone does not
# tell the sense; only a clue does, so a model that predicts the ending must carry the sense at the word.
SENSES: dict[str, dict] = {
    "bank": {
        "phrases": [
            "went to the bank",
            "sat on the bank",
            "walked to the bank",
            "stood at the bank",
            "came to the bank",
            "was at the bank",
            "stopped at the bank",
            "waited at the bank",
            "ran to the bank",
            "reached the bank",
            "looked at the bank",
            "drove to the bank",
            "rested on the bank",
            "got to the bank",
        ],
        "river": {
            "before": [
                "went fishing",
                "took the boat down the river",
                "walked by the stream",
                "saw fish in the water",
                "sat in the grass by the lake",
                "swam in the river",
                "was fishing in the stream",
                "rowed the boat on the lake",
                "caught a fish",
                "watched the ducks on the river",
                "had a long swim",
                "followed the river",
                "paddled the canoe",
                "saw frogs in the reeds",
                "crossed the stream",
                "threw stones into the water",
                "went for a swim",
                "fed the ducks",
                "walked along the river",
                "was wet from the river",
                "took a fishing rod",
                "heard the water flow",
            ],
            "after": [
                "by the water",
                "in the mud",
                "near the boat",
                "under the trees",
                "to fish",
                "in the grass",
                "of the river",
                "to watch the ducks",
                "where the water was deep",
                "to dry in the sun",
                "with a fishing rod",
                "beside the stream",
                "of the lake",
                "to swim",
                "covered in mud and reeds",
            ],
        },
        "money": {
            "before": [
                "needed money",
                "had no cash",
                "wanted a loan",
                "had savings",
                "got paid",
                "needed coins",
                "wanted to pay a bill",
                "had a cheque",
                "lost a credit card",
                "saved money for a bike",
                "needed cash for the trip",
                "wanted to open an account",
                "counted the coins",
                "checked the balance",
                "got a salary",
                "had to pay the rent",
                "wanted to change dollars",
                "had a deposit",
                "needed a mortgage",
                "wanted to borrow money",
                "was short of money",
            ],
            "after": [
                "to get cash",
                "for a loan",
                "to pay",
                "with the money",
                "to withdraw money",
                "to open an account",
                "for the savings",
                "to deposit a cheque",
                "to change some dollars",
                "to pay the bill",
                "to ask about the mortgage",
                "with a bag of coins",
                "to see the cashier",
                "for a new credit card",
                "to borrow money",
            ],
        },
    },
    "bat": {
        "phrases": ["saw the bat", "held the bat", "found a bat", "looked at the bat", "picked up the bat", "showed us the bat"],
        "animal": {
            "before": [
                "went into the dark cave",
                "walked in the forest at night",
                "heard wings in the night",
                "looked at the animal",
                "studied the animals of the night",
                "stood in the cave",
            ],
            "after": ["fly out of the cave", "with black wings", "in the night", "fly over the trees", "hanging upside down", "eat insects"],
        },
        "sport": {
            "before": [
                "played cricket",
                "went to the baseball game",
                "wanted to hit the ball",
                "was on the team",
                "practised for the match",
                "joined the cricket club",
            ],
            "after": ["and hit the ball", "in the game", "for the match", "and made a swing", "and scored a run", "made of wood"],
        },
    },
    "fair": {
        "phrases": ["said it was fair", "went to the fair", "wanted it fair", "thought it was fair", "talked about the fair"],
        "fairground": {
            "before": ["liked rides and music", "wanted to win a prize", "had fun in the summer", "went to see the show", "bought a ticket for the rides"],
            "after": ["with rides and a tent", "and won a prize", "with music and dance", "for the fun", "with the big wheel"],
        },
        "just": {
            "before": ["looked at the rules", "heard the judge", "made an honest decision", "wanted an equal share", "counted the votes"],
            "after": ["and honest", "to share it", "and equal", "by the rules", "for everyone"],
        },
    },
    "light": {
        "phrases": ["saw the light", "said it was light", "found the light", "liked the light", "checked the light"],
        "lamp": {
            "before": ["turned on the lamp", "was in the dark room", "looked at the sun", "put the switch on", "lit a candle"],
            "after": ["of the lamp", "and it was bright", "from the bulb", "in the dark", "from the window"],
        },
        "weight": {
            "before": ["lifted the bag", "carried the box", "held a feather", "picked up the soft bag", "weighed the parcel"],
            "after": ["and not heavy", "to carry", "like a feather", "and easy to lift", "as paper"],
        },
    },
    "match": {
        "phrases": ["watched the match", "talked about the match", "found the match", "wanted the match"],
        "game": {
            "before": ["played football", "cheered for the team", "bought tickets for the stadium", "scored a goal"],
            "after": ["between the two teams", "and the final score", "in the stadium", "and the goal"],
        },
        "fire": {
            "before": ["needed to light the candle", "wanted to start a fire", "opened the little box", "lit the stove"],
            "after": ["and lit the candle", "to start the fire", "and the small flame", "from the box"],
        },
    },
    "spring": {
        "phrases": ["liked the spring", "saw the spring", "talked about the spring", "found the spring"],
        "season": {
            "before": ["waited for the flowers", "was tired of winter", "planted seeds", "saw the first blossoms"],
            "after": ["when the flowers grow", "after the cold winter", "with warm days", "and the birds sing"],
        },
        "water": {
            "before": ["climbed the mountain path", "was thirsty on the hill", "followed the cold water", "filled a bottle"],
            "after": ["of fresh water", "under the rocks", "that fed the stream", "of cold clear water"],
        },
    },
}

# Everyday classroom sentences: templates whose slots are filled from the lists below.
EVERYDAY = [
    "{s} {read} a {adj} book about {topic} .",
    "the teacher explained {topic} to the class .",
    "{s} asked the teacher a question about {topic} .",
    "{s} did the homework after school .",
    "our class learned about {topic} today .",
    "{s} wrote a {adj} story about {animal} .",
    "the students worked in groups on a project about {topic} .",
    "{s} forgot the homework at home .",
    "{s} drank {drink} in the kitchen .",
    "{s} ate {food} for {meal} .",
    "{s} cooked {food} for the family .",
    "the {animal} ran across the {place} .",
    "the {animal} slept under the {thing} .",
    "{s} saw a {adj} {animal} in the {place} .",
    "it was {weather} in the {time} , so {s} stayed at home .",
    "the weather was {weather} on {day} .",
    "{s} went to {destination} by {vehicle} .",
    "{s} took the {vehicle} to {destination} on {day} .",
    "{s} played {game} with friends in the {place} .",
    "{s} likes to play {game} after school .",
    "{s} bought {food} and {drink} at the shop .",
    "{s} helped {s2} with the {chore} .",
    "{s} cleaned the {room} on {day} .",
    "{s} opened the window because it was {weather} .",
    "the {job} works in the {workplace} .",
    "{s} wants to be a {job} one day .",
    "{s} met {s2} at the {destination} .",
    "{s} gave {s2} a {adj} present .",
    "{s} was {feeling} because the test was {adj2} .",
    "{s} felt {feeling} after the {event} .",
    "{s} practised the piano for an hour .",
    "the children sang a song at the {event} .",
    "{s} drew a picture of a {animal} .",
    "{s} answered the question correctly .",
    "the lesson started at nine o'clock .",
    "the library is next to the {workplace} .",
    "{s} borrowed a book from the library .",
    "{s} listened to music on the way to school .",
    "the computer in the classroom was {adj2} .",
    "{s} walked the dog in the {place} .",
    "{s} planted flowers in the garden .",
    "the city has a big {workplace} and a small {workplace2} .",
    "{s} visited {s2} during the holidays .",
    "{s} watched a film about {topic} .",
    "{s} learned that {fact} .",
    "the teacher said that {fact} .",
    "in {topic} we learn how {fact} .",
    "do you know why {fact} ?",
    "what is your favourite {kind} ?",
    "my favourite {kind} is {favourite} .",
    "where are the {things} ?",
    "the {things} are on the {thing} .",
    "who left the {things} on the {thing} ?",
    "can you help me with this {task} , please ?",
    "could you open the door , please ?",
    "would you like some {food} ?",
    "we will go to {destination} {when} .",
    "{s} will visit {destination} next week .",
    "it will rain {when} , so take an umbrella .",
    "there are {number} {things} in the {room} .",
    "there is a {adj} {animal} in the {place} .",
    "this {thing} is {adj2} , but that one is {adj2} .",
    "these {things} are {adj} , and those are {adj} .",
    "{s} should not {bad_habit} .",
    "you must not {bad_habit} in class .",
    "{s} may be late because the {vehicle} is slow .",
    "{s} can {skill} very well .",
    "{s} cannot {skill} yet , but {s2} can .",
    "if it is {weather} tomorrow , we will {plan} .",
    "{s} always {habit} before {meal} .",
    "every morning {s} {habit} .",
    "{s} usually {habit} in the evening .",
    "{s} lost a {colour} {item} on the {road} .",
    "{s} found the {item} under the {thing} .",
    "{s} was born in a {adj} town near the sea .",
    "{s} lives in a {colour} house with a big garden .",
    "{s} said : \" {quote} \"",
    "\" {quote} \" , said {s} .",
    "{s} told {s2} a story about a {adj} king and a {adj} queen .",
    "the {body} of the {animal} was {colour} .",
    "{s} hurt a {body_part} while playing {game} .",
    "{s} washed the {body_parts} before {meal} .",
    "how many {things} do you have ?",
    "why is the sky blue ?",
    "what time is it ?",
    "which {thing} is yours ?",
    "whose {item} is this ?",
    "yes , I think so .",
    "no , that is not right .",
    "the {number2} students ( and the teacher ) went outside .",
    "the class was quiet ; everyone was reading .",
    "people in the city work , shop and live close together .",
    "the world is full of {adj} places .",
    "many people read the news every day .",
    "most children like {game} , but some prefer {game2} .",
    "each student has a {colour} notebook and a pencil .",
    "the number of students grew every year .",
    "in autumn the leaves turn red , yellow and brown .",
    "at the end of the day , {s} was tired but happy .",
    "{s} tried to catch the ball , but it flew over the wall .",
    "{s} jumped over the puddle and ran home .",
    "{s} climbed the tree to look at the birds .",
    "{s} threw the ball to the dog .",
    "{s} called {s2} and asked for help .",
    "{s} sent a letter to a friend in another country .",
    "{s} sold the old bike and bought a new one .",
    "{s} brought {food} to the party .",
    "{s} kept the secret for a long time .",
    "{s} waited for the bus in the rain .",
    "{s} stopped at the corner and looked left and right .",
    "{s} moved to a new house last year .",
    "{s} turned off the computer and went to sleep .",
    "{s} has been to {destination} many times .",
    "{s} is writing a poem about the sea .",
    "write a {adj} poem about {topic} .",
    "write your name at the top of the {task} .",
    "please write a {adj} story about a {animal} .",
    "the {animal} sat on the mat .",
    "the {animal} sat on the mat in the {weather} room .",
    "the {animal} slept on the mat because it was {feeling} .",
    "the {animal} bit the {animal} .",
    "the {animal} bit {s} on the {body_part} .",
    "{s} was withdrawing money from the machine .",
    "{s} was walking home when it started to rain .",
]

SLOTS: dict[str, list[str]] = {
    "read": ["read", "found", "bought", "borrowed", "liked", "finished"],
    "adj": ["long", "short", "funny", "sad", "new", "old", "good", "strange", "beautiful", "small", "big", "interesting"],
    "adj2": ["easy", "hard", "difficult", "simple", "broken", "slow", "fast", "noisy"],
    "topic": [
        "history",
        "science",
        "maths",
        "music",
        "the planets",
        "animals",
        "plants",
        "the weather",
        "computers",
        "language",
        "the ocean",
        "the human body",
        "volcanoes",
        "electricity",
        "art",
        "geography",
        "numbers",
        "words",
        "the solar system",
        "machines",
        "dinosaurs",
    ],
    "animal": ["cat", "dog", "horse", "cow", "bird", "mouse", "rabbit", "fox", "sheep", "duck", "lion", "bear", "owl", "frog"],
    "drink": ["tea", "milk", "water", "juice", "coffee", "hot chocolate"],
    "food": ["bread", "soup", "rice", "pasta", "an apple", "a sandwich", "eggs", "cake", "vegetables", "pizza", "fruit"],
    "meal": ["breakfast", "lunch", "dinner"],
    "place": ["field", "garden", "park", "yard", "forest", "street", "playground"],
    "thing": ["table", "bed", "chair", "car", "tree", "stairs"],
    "weather": ["hot", "cold", "rainy", "windy", "sunny", "cloudy", "snowy", "warm"],
    "time": ["morning", "afternoon", "evening", "night", "winter", "summer"],
    "day": ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"],
    "destination": [
        "school",
        "the station",
        "the museum",
        "the zoo",
        "the market",
        "the hospital",
        "the beach",
        "the city",
        "the village",
        "the airport",
        "the cinema",
        "the library",
    ],
    "vehicle": ["bus", "train", "car", "bike", "plane", "taxi"],
    "game": ["football", "chess", "tennis", "basketball", "cards", "hide and seek"],
    "chore": ["dishes", "shopping", "garden", "cooking", "washing", "homework"],
    "room": ["kitchen", "bedroom", "classroom", "bathroom", "living room"],
    "job": ["teacher", "doctor", "nurse", "farmer", "baker", "driver", "pilot", "scientist", "writer", "police officer", "engineer", "cook"],
    "workplace": ["school", "hospital", "office", "factory", "shop", "restaurant", "farm", "station", "museum"],
    "workplace2": ["library", "bakery", "park", "cinema", "post office"],
    "feeling": ["happy", "sad", "tired", "proud", "nervous", "excited", "angry", "worried"],
    "event": ["party", "concert", "game", "test", "trip", "holiday", "meeting"],
    "kind": ["colour", "animal", "book", "game", "subject", "food", "song", "season"],
    "favourite": ["blue", "green", "the horse", "chess", "science", "pizza", "winter", "history"],
    "things": ["keys", "pencils", "books", "shoes", "glasses", "cups", "apples", "chairs", "toys"],
    "task": ["question", "problem", "exercise", "box", "bag", "homework"],
    "when": ["tomorrow", "next week", "on saturday", "after lunch", "in the summer", "tonight"],
    "number": ["two", "three", "four", "five", "six", "ten", "many", "no"],
    "number2": ["two", "three", "four", "five", "twenty", "thirty"],
    "bad_habit": ["shout", "run in the corridor", "eat in the library", "talk during the test", "forget the homework"],
    "skill": ["swim", "draw", "sing", "cook", "count to a hundred", "ride a bike", "speak french", "dance"],
    "plan": ["go to the beach", "have a picnic", "play outside", "visit the zoo", "stay at home"],
    "habit": ["brushes their teeth", "reads the news", "walks the dog", "drinks a glass of water", "does some exercise", "makes the bed"],
    "colour": ["red", "blue", "green", "yellow", "white", "black", "brown", "orange", "purple"],
    "item": ["pen", "hat", "glove", "key", "book", "phone", "wallet", "ball", "scarf"],
    "road": ["road", "street", "way home", "bus", "train"],
    "quote": ["I am hungry", "let us go home", "thank you very much", "see you tomorrow", "this is my friend", "where is my book", "good morning"],
    "body": ["head", "tail", "face", "back", "fur"],
    "body_part": ["arm", "leg", "hand", "foot", "eye"],
    "body_parts": ["hands", "feet", "face"],
    "game2": ["reading", "drawing", "music", "swimming"],
    "fact": [
        "plants need light and water",
        "the earth goes around the sun",
        "water freezes when it is cold",
        "birds build nests in spring",
        "the heart pumps blood",
        "ice melts in the sun",
        "the moon goes around the earth",
        "bees make honey",
        "sound travels through the air",
    ],
}

# "bank" as the subject: the clue is what is said about it, after the word.
SUBJECT = {
    "river": [
        "was high above the water",
        "had tall trees on it",
        "was soft under our feet",
        "was wet and slippery",
        "was full of frogs and ducks",
        "was a good place to fish",
        "of the lake was green",
        "was eaten away by the current",
    ],
    "money": [
        "hired a new cashier",
        "changed its opening hours",
        "opened a new branch in town",
        "keeps the money safe",
        "sent {s} a new credit card",
        "paid interest on the savings",
        "was full of people paying bills",
        "lent money to the shop",
    ],
}

HELD_OUT = {  # bank sentences the model never trains on, for the tests and the lessons
    "river": [
        "the woman was fishing in the stream and stood at the bank",
        "my friend swam in the river and came to the bank",
        "the boy rowed the boat on the lake and walked to the bank",
        "the girl saw fish in the water and was at the bank",
    ],
    "money": [
        "the woman needed coins and stood at the bank",
        "my friend had a deposit and came to the bank",
        "the boy wanted to pay and walked to the bank",
        "the girl got paid and was at the bank",
    ],
}

CONNECTORS = ["{s} {before} and {phrase}", "{s} {before} , then {phrase}", "after {s} {before} , {s2} {phrase}", "{s} {before} , so {s2} {phrase}"]


def _fill(template: str, rng: random.Random) -> str:
    out = template
    for slot in ("s2", "s"):
        while "{" + slot + "}" in out:
            out = out.replace("{" + slot + "}", rng.choice(SUBJECTS), 1)
    for slot, words in SLOTS.items():
        while "{" + slot + "}" in out:
            out = out.replace("{" + slot + "}", rng.choice(words), 1)
    return out


VOWELS = frozenset("aeiou")  # every word of the corpus after "a" that starts with one is said with a vowel
# words the templates write in lower case that a person writes with a capital (the toy models' tokenizers,
# BPE and word-level, lowercase every text: the models read the same tokens either way)
PROPER = {word: word.capitalize() for word in [*SLOTS["day"], "french", "i"]}


def _capitalised(sentence: str) -> str:
    """Written as a person would: capital first letter, "I", days and languages with a capital, "an" before
    a vowel, no space before punctuation."""
    words = [PROPER.get(w, w) for w in sentence.split()]
    words = ["an" if w == "a" and following[:1] in VOWELS else w for w, following in zip(words, [*words[1:], ""])]
    text = " ".join(words)
    for mark in (",", ".", "?", "!", ";", ":", ")"):
        text = text.replace(" " + mark, mark)
    text = text.replace("( ", "(")
    return text[0].upper() + text[1:]


CLUE_SIDES = ("before", "after", "both")  # where a sense sentence's clue stands, relative to the word


def _sense_sentence(word: str, sense: str, rng: random.Random) -> tuple[str, str]:
    """One sentence with the clue before the word (1 in 7), after it (3 in 7), or on both sides (3 in 7),
    and that side (one of `CLUE_SIDES`)."""
    senses = SENSES[word]
    phrase = rng.choice(senses["phrases"])
    before, after = rng.choice(senses[sense]["before"]), rng.choice(senses[sense]["after"])
    where = rng.choices((0, 1, 2), (1, 3, 3))[0]
    subject = SUBJECT.get(sense) if word == "bank" and rng.random() < 0.25 else None
    if subject and where == 1:
        return _fill(f"the bank {rng.choice(subject)} .", rng), CLUE_SIDES[where]
    if subject and where == 2:
        return _fill(f"{{s}} {before} , and the bank {rng.choice(subject)} .", rng), CLUE_SIDES[where]
    if where == 1:  # clue after only
        return _fill(f"{{s}} {phrase} {after} .", rng), CLUE_SIDES[where]
    template = rng.choice(CONNECTORS)
    sentence = _fill(template.replace("{before}", before).replace("{phrase}", phrase), rng)
    return (f"{sentence} {after} ." if where == 2 else f"{sentence} ."), CLUE_SIDES[where]


# Free-syntax frames for "bank" with its sense after the word, from the corpus's own words: the same
# clues, at distances of 1 to 6 words, with "bank" as subject or object, in questions and clauses.
CONJUNCTIONS = ["because", "when", "after", "while", "since", "and then", "but", "where"]
FILLERS = ["", "", "yesterday", "again", "early", "on {day}", "in the {time}", "with {s2}", "one day", "after school", "every week", "at last"]
OPENERS = ["on {day} ,", "in the {time} ,", "yesterday ,", "after lunch ,", "at the end of the day ,", "one day ,", "last year ,"]
WHERE_BANK = ["", "", "in our town", "near the {workplace}", "on the corner", "by the road", "there"]
ASKING = ["do you know why", "is it true that", "{s} said that", "{s} told {s2} that", "who knew that", "everyone says that"]  # the first two ask


def _varied_bank_sentence(sense: str, rng: random.Random) -> str:
    """One "bank" sentence in a free frame, its clue after the word (1 to 6 words after it)."""
    clues = SENSES["bank"][sense]
    phrase = rng.choice(SENSES["bank"]["phrases"])
    frame = rng.randrange(5)
    if frame == 0:  # a clause after the word: "... the bank because her father needed money ."
        text = f"{{s}} {phrase} {rng.choice(CONJUNCTIONS)} {{s2}} {rng.choice(clues['before'])} ."
    elif frame == 1:  # something between the word and its clue
        text = f"{rng.choice(OPENERS + ['', ''])} {{s}} {phrase} {rng.choice(FILLERS)} {rng.choice(clues['after'])} ."
    elif frame == 2:  # the bank as subject, where it is in between
        text = f"{rng.choice(['the', 'this', 'that', 'our'])} bank {rng.choice(WHERE_BANK)} {rng.choice(SUBJECT[sense])} ."
    elif frame == 3:  # a question or a reported clause
        asking = rng.randrange(len(ASKING))
        text = f"{ASKING[asking]} the bank {rng.choice(SUBJECT[sense])} {'?' if asking < 2 else '.'}"
    else:  # the clue as a second clause: "the bank was quiet , and the man needed coins ."
        state = rng.choice(["quiet", "busy", "open", "old", "near"])
        text = f"{rng.choice(['the', 'this', 'that', 'our'])} bank was {state} , and {{s}} {rng.choice(clues['before'])} ."
    return re.sub(r"\s+", " ", _fill(text, rng)).strip()


def _varied_sense_sentence(word: str, sense: str, rng: random.Random) -> tuple[str, str]:
    """One sentence of any ambiguous word in a free frame, and its clue's side: the same clues as the
    templates, a few words from the word, after it (a clause, or words in between) or before it (an
    opener, words in between, a second clause after the word that tells nothing)."""
    clues = SENSES[word][sense]
    phrase = rng.choice(SENSES[word]["phrases"])
    frame = rng.randrange(4)
    if frame == 0:  # a clause after the word: "... found the match because the boy wanted to start a fire ."
        text, side = f"{rng.choice(OPENERS + ['', ''])} {{s}} {phrase} {rng.choice(CONJUNCTIONS)} {{s2}} {rng.choice(clues['before'])} .", "after"
    elif frame == 1:  # something between the word and its clue
        text, side = f"{rng.choice(OPENERS + ['', ''])} {{s}} {phrase} {rng.choice(FILLERS)} {rng.choice(clues['after'])} .", "after"
    elif frame == 2:  # the clue first, then words between it and the word
        opener, filler = rng.choice(OPENERS + ["", ""]), rng.choice(FILLERS)
        text, side = f"{opener} {{s}} {rng.choice(clues['before'])} {filler} , and {{s2}} {phrase} {rng.choice(FILLERS)} .", "before"
    else:  # the clue first, then a neutral clause after the word
        text, side = f"{rng.choice(CONJUNCTIONS[:5])} {{s}} {rng.choice(clues['before'])} , {{s2}} {phrase} {rng.choice(FILLERS)} .", "before"
    return re.sub(r"\s+", " ", _fill(text, rng)).strip(), side


@dataclass(frozen=True)
class Labelled:
    """A corpus sentence and, for a sense sentence, its ambiguous word, that word's sense and the clue's side."""

    text: str
    word: str | None = None  # a key of SENSES; None for an everyday sentence
    sense: str | None = None
    clue: str | None = None  # one of CLUE_SIDES ("after" for a free-frame "bank" sentence)


def labelled_sentences(n: int, seed: int = 0, plain_share: float = 0.4, bank_variety: float = 0.0, variety: float = 0.0) -> list[Labelled]:
    """The sentences of `sentences` (the same draws), each with what the generator knows of its sense."""
    rng = random.Random(seed)
    pairs = [(word, sense) for word, senses in SENSES.items() for sense in senses if sense != "phrases"]
    weights = [4 if word == "bank" else 1 for word, _ in pairs]  # "bank" is the story: more of it
    held_out = {s for group in HELD_OUT.values() for s in group}
    out = []
    while len(out) < n:
        if rng.random() < plain_share:
            entry = Labelled(_fill(rng.choice(EVERYDAY), rng))
        else:
            word, sense = rng.choices(pairs, weights)[0]
            varied = word == "bank" and bank_variety > 0 and rng.random() < bank_variety
            if varied:
                entry = Labelled(_varied_bank_sentence(sense, rng), word, sense, "after")
            elif variety > 0 and rng.random() < variety:
                text, clue = _varied_sense_sentence(word, sense, rng)
                entry = Labelled(text, word, sense, clue)
            else:
                text, clue = _sense_sentence(word, sense, rng)
                entry = Labelled(text, word, sense, clue)
        if any(entry.text.lower().startswith(h) for h in held_out):
            continue
        out.append(replace(entry, text=_capitalised(entry.text)))
    return out


def sentences(n: int, seed: int = 0, plain_share: float = 0.4, bank_variety: float = 0.0, variety: float = 0.0) -> list[str]:
    """`n` sentences: the senses of each ambiguous word evenly mixed with everyday ones; deterministic.

    bank_variety: the share of the "bank" sentences written in the free frames of `_varied_bank_sentence`;
    variety: the share of the other sense sentences (every ambiguous word) written in those of
    `_varied_sense_sentence`. 0 and 0 keep the template sentences only, the same draws as without the options.
    """
    return [entry.text for entry in labelled_sentences(n, seed, plain_share, bank_variety, variety)]


def corpus_words() -> list[str]:
    """Every lowercased word and punctuation mark the corpus can write, in first-seen order."""
    from model.tokenizers import WORD_PATTERN

    texts = list(EVERYDAY) + SUBJECTS + [w for words in SLOTS.values() for w in words] + CONNECTORS
    texts += [s for group in HELD_OUT.values() for s in group] + [s for group in SUBJECT.values() for s in group]
    for senses in SENSES.values():
        texts += senses["phrases"]
        for sense, parts in senses.items():
            if sense != "phrases":
                texts += parts["before"] + parts["after"]
    words = [m.group().lower() for t in texts for m in WORD_PATTERN.finditer(re.sub(r"\{\w+\}", " ", t))]
    return list(dict.fromkeys(words))
